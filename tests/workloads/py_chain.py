# SPDX-License-Identifier: MIT
# Four nested Python functions over a hot leaf, for 1.5 s of CPU time (e2e 28, 60).
import time

def jit_py_leaf(n):
    t = 0
    for i in range(n):
        t += i * i
    return t

def jit_py_f4(): return jit_py_leaf(20000)
def jit_py_f3(): return jit_py_f4()
def jit_py_f2(): return jit_py_f3()

def jit_py_f1():
    end = time.process_time() + 1.5
    while time.process_time() < end:
        jit_py_f2()

jit_py_f1()
