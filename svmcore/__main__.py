import sys

try:
    from svmcore.cli import main

    code = main()
except KeyboardInterrupt:  # Ctrl-C while the command line is still importing (its own or its command's modules)
    print("svmcore: interrupted by SIGINT", file=sys.stderr)
    sys.exit(130)
sys.exit(code)
