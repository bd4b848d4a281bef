module coursebench

go 1.26.0

require (
	github.com/openai/openai-go/v3 v3.99.0
	github.com/tmaxmax/go-sse v0.12.0
	tinyllm v0.0.0
)

require (
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
)

replace tinyllm => ../../../reference/go/ag01/go
