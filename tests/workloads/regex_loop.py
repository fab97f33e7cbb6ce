# SPDX-License-Identifier: MIT
# A regex-heavy Python loop (tests/e2e/67-python-native.sh): the work is the regex engine's C
# code (sre_ucs1_match), called from the Python functions scan <- work <- <module>.
import re, sys, time
PAT = re.compile(r'(?:[a-z]+\d)+#')
TEXT = ('abc1' * 300) + '!'
def scan():
    return PAT.search(TEXT)
def work(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        scan()
work(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)
