#!/usr/bin/python3
"""A webhook receiver for integration tests: records what it is sent, one JSON line per POST.

    webhook_receiver.py --out FILE [--port 0] [--ready-file FILE] [--fail-first N]

Each POST it accepts is answered 200 and its body appended to FILE as one line (JSON bodies
re-serialized compactly; anything else as a JSON string), flushed before the answer, so a test
can read FILE as soon as its request returns. The first N POSTs (--fail-first) are answered
500 instead and not recorded, to test retries. With --port 0 the OS picks the port; the port is
written to --ready-file (atomically) once the server listens. Python standard library only.
"""

import argparse
import http.server
import json
import os
import sys
import threading


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="file that receives one JSON line per POST")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free)")
    parser.add_argument("--ready-file", help="written with the port once listening")
    parser.add_argument("--fail-first", type=int, default=0,
                        help="answer 500 to this many POSTs first")
    args = parser.parse_args()

    lock = threading.Lock()
    state = {"requests": 0}
    out = open(args.out, "a", encoding="utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                state["requests"] += 1
                number = state["requests"]
                refuse = number <= args.fail_first
                if not refuse:
                    try:
                        line = json.dumps(json.loads(body), separators=(",", ":"))
                    except ValueError:
                        line = json.dumps(body.decode("utf-8", "replace"))
                    out.write(line + "\n")
                    out.flush()
            if refuse:
                self.answer(500, "refused on purpose (%d of %d)" % (number, args.fail_first))
            else:
                self.answer(200, "ok")

        def answer(self, status, text):
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *log_args):  # to stderr, which the test keeps as a log
            sys.stderr.write("webhook_receiver: " + (format % log_args) + "\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.ready_file:
        temporary = args.ready_file + ".tmp"
        with open(temporary, "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.rename(temporary, args.ready_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
