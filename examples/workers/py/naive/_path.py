"""Lets a naive variant import the client and the correct pipeline from the folder above."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
