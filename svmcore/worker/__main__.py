import sys

from svmcore.worker.main import main

sys.exit(main(sys.argv[1]))
