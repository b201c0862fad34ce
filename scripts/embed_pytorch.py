"""PyTorch's figures for the embed bench's workload (benches/benches/embed.rs).

Runs the bench's own texts (`embed texts` prints them) through sentence-transformers on the CPU
and prints the same three lines: short texts one at a time, the 64 short texts batched, the 16
window-filling texts batched; texts/s median and best, CPU ms per text (process time, all
threads). Usage:

    EMBED_BIN texts > /tmp/texts.tsv
    python scripts/embed_pytorch.py MODEL_DIR /tmp/texts.tsv [THREADS]
"""

import statistics
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def measure(n_texts, rounds, run):
    run()
    cpu_before = time.process_time()
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        rates.append(n_texts / (time.perf_counter() - started))
    cpu_ms = (time.process_time() - cpu_before) * 1e3 / (n_texts * rounds)
    return statistics.median(sorted(rates)), max(rates), cpu_ms


def main():
    model_dir, texts_path = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(threads)
    short, long = [], []
    with open(texts_path, encoding="utf-8") as f:
        for line in f:
            kind, _, text = line.rstrip("\n").partition("\t")
            (short if kind == "short" else long).append(text)
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = 256
    print(f"pytorch {torch.__version__}, threads {torch.get_num_threads()}")

    def encode(batch, size):
        model.encode(batch, batch_size=size, normalize_embeddings=True)

    def one_at_a_time():
        for text in short:
            encode([text], 1)

    rows = [
        ("short texts (12 words), one at a time", measure(len(short), 3, one_at_a_time)),
        ("short texts (12 words), batch of 64", measure(len(short), 5, lambda: encode(short, 64))),
        (
            "256-token texts (400 words, truncated), batch of 16",
            measure(len(long), 3, lambda: encode(long, 16)),
        ),
    ]
    for what, (median, best, cpu_ms) in rows:
        print(f"pytorch  {what:<52} {median:>9.1f} texts/s median {best:>9.1f} best {cpu_ms:>8.1f} cpu-ms/text")


if __name__ == "__main__":
    main()
