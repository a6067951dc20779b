import sys

try:
    from svmcore.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line is still importing: nothing has started yet
    print("svmcore: interrupted by SIGINT", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
