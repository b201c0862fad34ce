#!/usr/bin/env python3
"""Tests of serve.py's contract logic without the model (a word-count tokenizer stands in):
the window cut and its /count_tokens entry, and the role routing. The contract's own checks
(truncated == count > window, window_end_char within the text and equal to its length when
nothing is cut) are asserted as engine/src/embed/http.rs asserts them.

Run: python3 scale/e5/test_serve.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve  # noqa: E402


def words(text, is_query):
    """One token per word, the prefix's one word, and two specials."""
    return len(text.split()) + 1 + 2


class Window(unittest.TestCase):
    def check_entry(self, text, window):
        end, count = serve.fits(words, text, True, window)
        truncated = count > window
        self.assertLessEqual(end, len(text))
        if not truncated:
            self.assertEqual(end, len(text))
        return end, count, truncated

    def test_a_short_text_is_whole(self):
        end, count, truncated = self.check_entry("a b c", 10)
        self.assertEqual((end, count, truncated), (5, 6, False))

    def test_a_long_text_is_cut_at_a_word_and_fits(self):
        text = " ".join("w%d" % i for i in range(100))
        end, count, truncated = self.check_entry(text, 20)
        self.assertTrue(truncated)
        self.assertEqual(count, 103)
        self.assertLessEqual(words(text[:end], True), 20)
        self.assertGreater(words(text[:end + 4], True), 20, "the longest prefix that fits")
        self.assertTrue(text[end] == " ", "the cut falls between words")

    def test_exactly_the_window_is_not_cut(self):
        text = " ".join(["x"] * 7)  # 7 + 3 = 10 tokens
        self.assertEqual(self.check_entry(text, 10)[2], False)


class Routes(unittest.TestCase):
    def test_the_role_is_in_the_path(self):
        self.assertEqual(serve.route("/query/embed", "passage"), ("query", "embed"))
        self.assertEqual(serve.route("/passage/count_tokens", "query"),
                         ("passage", "count_tokens"))
        self.assertEqual(serve.route("/embed", "query"), ("query", "embed"))
        self.assertEqual(serve.route("/capabilities?x=1", "passage"),
                         ("passage", "capabilities"))
        self.assertEqual(serve.route("/other/embed", "query"), (None, None))


if __name__ == "__main__":
    unittest.main()
