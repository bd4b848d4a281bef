from course.cli import main

main()
