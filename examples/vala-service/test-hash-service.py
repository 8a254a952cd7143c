#!/usr/bin/env python3
# test-hash-service.py: drives the hash-service example over loopback.
#
# Copyright 2026 The wsrt authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
#   test-hash-service.py SERVICE clients [N]   N concurrent clients (default
#                                              1000), every reply checked
#   test-hash-service.py SERVICE bad           malformed and oversized
#                                              requests: each gets an ERR
#                                              line, the service stays up
#
# Starts the service on a free port with two workers, stops it with SIGTERM
# at the end and checks that it exits cleanly with the counts it printed.
# Every socket has a timeout and the whole run an alarm (the watchdog; meson
# has its own timeout on top).

import asyncio
import hashlib
import os
import re
import resource
import signal
import socket
import subprocess
import sys

ALARM_SECONDS = 100
IO_TIMEOUT = 60


def block(seed):
    return bytes(((seed * 131 + j * 17) & 0xff) for j in range(256))


def expected_digest(size, seed):
    b = block(seed)
    data = (b * (size // 256 + 1))[:size]
    return hashlib.sha256(data).hexdigest()


def start_service(service):
    env = dict(os.environ)
    env['G_DEBUG'] = ','.join(filter(None, [env.get('G_DEBUG'), 'fatal-criticals']))
    proc = subprocess.Popen([service, '--workers', '2', '--max-size', str(16 << 20)],
                            stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    m = re.match(r'listening on ([0-9.]+):(\d+)$', line.strip())
    if not m:
        proc.kill()
        sys.exit(f'FAIL: the service did not say where it listens: {line!r}')
    print(f'# service: {line.strip()}')
    return proc, (m.group(1), int(m.group(2)))


def stop_service(proc):
    if proc.poll() is not None:
        sys.exit(f'FAIL: the service died (exit status {proc.returncode})')
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    print(f'# service: {out.strip()}')
    if proc.returncode != 0:
        sys.exit(f'FAIL: the service exited with status {proc.returncode}')
    m = re.search(r'served (\d+) requests: (\d+) ok, (\d+) errors, (\d+) connections lost; '
                  r'\d+ tasks spawned, (\d+) cancelled at shutdown', out)
    if not m:
        sys.exit('FAIL: the service did not print its counts')
    if int(m.group(5)) != 0:
        sys.exit('FAIL: connections were still in progress after the graceful stop')
    return tuple(int(g) for g in m.groups()[:4])


async def request(address, payload, half_close=False):
    """Sends @payload, returns the reply line (without the newline)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), IO_TIMEOUT)
    try:
        writer.write(payload)
        await writer.drain()
        if half_close:
            writer.write_eof()
        line = await asyncio.wait_for(reader.readline(), IO_TIMEOUT)
        return line.decode('ascii', 'replace').rstrip('\n')
    finally:
        writer.close()


async def check_hash(address, size, seed):
    reply = await request(address, f'HASH {size} {seed}\n'.encode())
    want = f'OK {size} {expected_digest(size, seed)}'
    return reply == want, reply, want


def sizes_for(n):
    # Mostly small, some large: 0 B to 1 MiB, the same every run.
    out = []
    for i in range(n):
        if i % 100 == 7:
            out.append(1 << 20)
        else:
            out.append((i * 7919) % 65536)
    return out


async def run_clients(address, n):
    sizes = sizes_for(n)
    results = await asyncio.gather(*(check_hash(address, size, i) for i, size in enumerate(sizes)),
                                   return_exceptions=True)
    bad = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException) or not r[0]]
    for i, r in bad[:5]:
        print(f'# client {i} (size {sizes[i]}): {r!r}')
    return n - len(bad), sum(sizes)


BAD_REQUESTS = [
    ('empty line', b'\n', False),
    ('unknown verb', b'HELLO 10\n', False),
    ('no size', b'HASH\n', False),
    ('negative size', b'HASH -5 1\n', False),
    ('size with letters', b'HASH 12abc\n', False),
    ('size overflow', b'HASH 99999999999999999999999 1\n', False),
    ('size above --max-size', b'HASH 1000000000 1\n', False),
    ('seed overflow', b'HASH 10 4294967296\n', False),
    ('too many words', b'HASH 10 1 2\n', False),
    ('two spaces', b'HASH  10\n', False),
    ('binary bytes', b'HASH \x00\xff\xfe 1\n', False),
    ('line of 200 bytes', b'HASH ' + b'1' * 195 + b'\n', False),
    ('line of 1 MiB', b'A' * (1 << 20) + b'\n', False),
    ('no newline, then end of stream', b'HASH 10 1', True),
    ('nothing, then end of stream', b'', True),
]


async def run_bad(address):
    failures = 0
    n_requests = 0
    for rounds in range(3):
        # Each bad request 20 times at once, and a good one after each kind.
        for name, payload, half_close in BAD_REQUESTS:
            replies = await asyncio.gather(*(request(address, payload, half_close)
                                             for _ in range(20)),
                                           return_exceptions=True)
            n_requests += len(replies)
            wrong = [r for r in replies if isinstance(r, BaseException) or not r.startswith('ERR ')]
            if wrong:
                failures += 1
                print(f'not ok - {name}: {wrong[0]!r}')
            elif rounds == 0:
                print(f'ok - {name}: {replies[0]}')
            ok, reply, want = await check_hash(address, 1000, rounds)
            n_requests += 1
            if not ok:
                failures += 1
                print(f'not ok - a good request after "{name}": {reply!r}, want {want!r}')
    return failures, n_requests


def main():
    signal.alarm(ALARM_SECONDS)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    service, mode = sys.argv[1], sys.argv[2]
    proc, address = start_service(service)
    try:
        if mode == 'clients':
            n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
            good, total_bytes = asyncio.run(run_clients(address, n))
            print(f'# {good} of {n} concurrent clients got the right SHA-256 '
                  f'({total_bytes} bytes hashed)')
            served, ok, errors, lost = stop_service(proc)
            print(f'# the service counted {served} requests: {ok} ok, {errors} errors, {lost} lost')
            if good != n or ok != n or errors != 0 or lost != 0:
                sys.exit('FAIL')
        elif mode == 'bad':
            failures, n_requests = asyncio.run(run_bad(address))
            served, ok, errors, lost = stop_service(proc)
            print(f'# {n_requests} requests sent; the service counted {served}: '
                  f'{ok} ok, {errors} errors, {lost} lost')
            if failures:
                sys.exit(f'FAIL: {failures} checks failed')
            n_good = 3 * len(BAD_REQUESTS)
            if ok != n_good or errors != n_requests - n_good:
                sys.exit(f'FAIL: expected {n_good} ok and {n_requests - n_good} errors')
        else:
            sys.exit(f'unknown mode {mode}')
    finally:
        if proc.poll() is None:
            proc.kill()
    print('PASS')


if __name__ == '__main__':
    main()
