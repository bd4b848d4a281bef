from course.cli import main

# Guarded: multiprocessing's forkserver imports the main module, and must not run the CLI again.
if __name__ == "__main__":
    main()
