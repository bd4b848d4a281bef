module tinyllm

go 1.22
