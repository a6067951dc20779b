import sys

from svmcore.cli import main

sys.exit(main())
