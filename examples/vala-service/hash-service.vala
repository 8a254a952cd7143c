/* hash-service.vala: a TCP service on loopback, one wsrt task per connection
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A client connects, sends one request line and gets one reply line:
 *
 *   HASH <size> [<seed>]\n   ->   OK <size> <sha256 in hex>\n
 *   anything else            ->   ERR <what is wrong>\n
 *
 * The buffer hashed is <size> bytes of a 256-byte block repeated, where
 * byte j of the block is (seed × 131 + j × 17) mod 256 (seed: 0 to
 * 4294967295, default 0), so a client can check the answer.
 *
 * GLib.SocketService accepts on the main loop; every connection then
 * becomes one detached task on the wsrt runtime (Ws.Runtime.spawn_detached)
 * whose poll function is a small state machine:
 *
 *  - read: a Vala async method reads the request line with GIO. Started
 *    from the poll, it runs on the worker's own GMainContext (the
 *    thread-default context of every worker), and its completion wakes
 *    the task (Ws.Waker). No thread waits for the client.
 *  - hash: the CPU work, on the pool: SHA-256 (GLib.Checksum) fed 64 KiB
 *    per poll; between two chunks the task yields (Ws.Context.yield) so
 *    that a large request does not hold a worker against the others.
 *  - write: the reply, written by another Vala async method, then close.
 *
 * Malformed requests, lines longer than 128 bytes, sizes above --max-size
 * and clients that go silent for 10 s get an ERR line; the connection
 * ends, the service goes on. SIGTERM or SIGINT stop it gracefully: it
 * stops accepting, lets the connections in progress end (for up to 5 s),
 * shuts the runtime down and prints how many requests it served.
 *
 *   hash-service [--port=N] [--workers=N] [--max-size=BYTES]
 *
 * It prints "listening on 127.0.0.1:PORT" once it accepts connections.
 */

const int MAX_LINE = 128;
const int CHUNK = 64 * 1024;
const int BLOCK = 256;
const uint TIMEOUT_SECONDS = 10;
const int DRAIN_LIMIT = 4 * 1024 * 1024;

static int n_ok;        /* atomic: requests answered with OK */
static int n_errors;    /* atomic: requests answered with ERR */
static int n_failed;    /* atomic: connections that ended in an I/O error */
static int n_active;    /* atomic: connections whose task has not ended */
static uint64 max_size = 64 * 1024 * 1024;

enum State {
    START,
    READING,
    HASHING,
    START_WRITE,
    WRITING,
    DONE
}

/* One connection: its task's state. Touched by one poll or one I/O
 * callback at a time, always on a worker; the waker orders them. */
class Connection : Object {
    SocketConnection connection;
    Cancellable cancellable = new Cancellable ();
    Ws.Waker? waker;
    State state = State.START;
    bool io_done;

    /* read */
    uint8[] line = new uint8[0];
    bool line_complete;
    bool line_too_long;
    Error? io_error;

    /* hash */
    Checksum? checksum;
    uint8[] chunk;
    uint64 size;
    uint64 fed;

    /* write */
    string reply;
    bool is_error;

    public Connection (SocketConnection connection) {
        this.connection = connection;
    }

    public Ws.Poll poll (Ws.Context cx) {
        while (true) {
            switch (state) {
            case State.START:
                waker = cx.get_waker ();
                state = State.READING;
                read_request.begin ((obj, res) => {
                    read_request.end (res);
                    io_done = true;
                    waker.wake ();
                });
                return Ws.Poll.PENDING;

            case State.READING:
                if (!io_done)
                    return Ws.Poll.PENDING;
                parse_request ();
                break;

            case State.HASHING:
                uint64 n = uint64.min (CHUNK, size - fed);
                checksum.update (chunk, (size_t) n);
                fed += n;
                if (fed < size)
                    return cx.yield ();   /* give way; polled again soon */
                reply = "OK %llu %s\n".printf (size, checksum.get_string ());
                state = State.START_WRITE;
                break;

            case State.START_WRITE:
                state = State.WRITING;
                io_done = false;
                write_reply.begin ((obj, res) => {
                    write_reply.end (res);
                    io_done = true;
                    waker.wake ();
                });
                return Ws.Poll.PENDING;

            case State.WRITING:
                if (!io_done)
                    return Ws.Poll.PENDING;
                if (io_error != null)
                    AtomicInt.inc (ref n_failed);
                else if (is_error)
                    AtomicInt.inc (ref n_errors);
                else
                    AtomicInt.inc (ref n_ok);
                AtomicInt.add (ref n_active, -1);
                state = State.DONE;
                return Ws.Poll.READY;

            case State.DONE:
                return Ws.Poll.READY;
            }
        }
    }

    void fail (string message) {
        reply = "ERR %s\n".printf (message);
        is_error = true;
        state = State.START_WRITE;
    }

    static bool parse_number (string text, uint64 max, out uint64 value) {
        value = 0;
        if (text.length == 0 || text.length > 20)
            return false;
        for (int i = 0; i < text.length; i++) {
            if (!text[i].isdigit ())
                return false;
            uint64 digit = text[i] - '0';
            if (value > (max - digit) / 10)
                return false;
            value = value * 10 + digit;
        }
        return true;
    }

    void parse_request () {
        if (io_error != null) {
            if (io_error is IOError.CANCELLED)
                fail ("no request line within %u s".printf (TIMEOUT_SECONDS));
            else
                fail ("cannot read the request: %s".printf (io_error.message));
            io_error = null;
            return;
        }
        if (line_too_long) {
            fail ("request line longer than %d bytes".printf (MAX_LINE));
            return;
        }
        if (!line_complete) {
            fail ("the request line must end with a newline");
            return;
        }

        int length = line.length;
        if (length > 0 && line[length - 1] == '\r')
            length--;
        for (int i = 0; i < length; i++) {
            if (line[i] < 0x20 || line[i] > 0x7e) {
                fail ("malformed request: not printable ASCII");
                return;
            }
        }
        var text = new StringBuilder.sized (length);
        for (int i = 0; i < length; i++)
            text.append_c ((char) line[i]);
        var words = text.str.split (" ");
        uint64 seed = 0;
        if (words.length < 2 || words.length > 3 || words[0] != "HASH") {
            fail ("malformed request: expected HASH <size> [<seed>]");
            return;
        }
        if (!parse_number (words[1], uint64.MAX, out size)) {
            fail ("malformed size: expected a number of bytes");
            return;
        }
        if (size > max_size) {
            fail ("size too large: at most %llu bytes".printf (max_size));
            return;
        }
        if (words.length == 3 && !parse_number (words[2], uint32.MAX, out seed)) {
            fail ("malformed seed: expected a number from 0 to %u".printf (uint32.MAX));
            return;
        }

        /* One chunk of the repeated block; every chunk starts at a
         * multiple of BLOCK, so the same bytes serve for all of them. */
        chunk = new uint8[uint64.min (CHUNK, size)];
        for (int i = 0; i < chunk.length; i++)
            chunk[i] = (uint8) (((uint32) seed * 131 + (i % BLOCK) * 17) & 0xff);
        checksum = new Checksum (ChecksumType.SHA256);
        fed = 0;
        state = size > 0 ? State.HASHING : State.START_WRITE;
        if (size == 0)
            reply = "OK 0 %s\n".printf (checksum.get_string ());
    }

    /* Cancels the I/O if nothing happens for TIMEOUT_SECONDS, on the
     * context that runs it (the worker's). */
    Source start_timeout () {
        var timeout = new TimeoutSource.seconds (TIMEOUT_SECONDS);
        timeout.set_callback (() => {
            cancellable.cancel ();
            return Source.REMOVE;
        });
        timeout.attach (MainContext.get_thread_default ());
        return timeout;
    }

    /* Runs on the worker's context: reads up to the first newline, at
     * most MAX_LINE bytes. */
    async void read_request () {
        var input = connection.input_stream;
        var buffer = new uint8[MAX_LINE + 1];
        var timeout = start_timeout ();
        size_t length = 0;

        try {
            while (length < buffer.length) {
                unowned uint8[] rest = buffer[length:buffer.length];
                ssize_t n = yield input.read_async (rest, Priority.DEFAULT, cancellable);
                if (n == 0)
                    break;    /* end of stream before a newline */
                for (size_t i = length; i < length + n; i++) {
                    if (buffer[i] == '\n') {
                        line = buffer[0:i];
                        line_complete = true;
                        break;
                    }
                }
                length += n;
                if (line_complete)
                    break;
            }
            if (!line_complete) {
                line = buffer[0:length];
                line_too_long = length > MAX_LINE;
            }
        } catch (Error e) {
            io_error = e;
        }
        timeout.destroy ();
    }

    /* Runs on the worker's context: writes the reply and closes. After an
     * error reply, reads what the client still sends (up to DRAIN_LIMIT)
     * so that closing does not reset the connection before the client has
     * read the reply. */
    async void write_reply () {
        var timeout = start_timeout ();

        try {
            size_t written;
            yield connection.output_stream.write_all_async (reply.data, Priority.DEFAULT,
                                                            cancellable, out written);
            if (is_error) {
                connection.socket.shutdown (false, true);
                var sink = new uint8[16 * 1024];
                size_t drained = 0;
                while (drained < DRAIN_LIMIT) {
                    ssize_t n = yield connection.input_stream.read_async (sink, Priority.DEFAULT,
                                                                          cancellable);
                    if (n <= 0)
                        break;
                    drained += n;
                }
            }
        } catch (Error e) {
            /* A client that went away: nothing to tell it. */
            if (!is_error)
                io_error = e;
        }
        try {
            yield connection.close_async (Priority.DEFAULT, null);
        } catch (Error e) {
        }
        timeout.destroy ();
    }
}

static int opt_port = 0;
static int opt_workers = 0;
static int64 opt_max_size = 64 * 1024 * 1024;

const OptionEntry[] options = {
    { "port", 'p', 0, OptionArg.INT, ref opt_port, "TCP port on 127.0.0.1 (default: 0, any free port)", "N" },
    { "workers", 'w', 0, OptionArg.INT, ref opt_workers, "Worker threads (default: 0, one per CPU)", "N" },
    { "max-size", 's', 0, OptionArg.INT64, ref opt_max_size, "Largest buffer to hash (default: 64 MiB)", "BYTES" },
    { null }
};

int main (string[] args) {
    try {
        var context = new OptionContext ("- hash buffers for clients, one wsrt task per connection");
        context.add_main_entries (options, null);
        context.parse (ref args);
    } catch (OptionError e) {
        printerr ("hash-service: %s\n", e.message);
        return 2;
    }
    if (opt_port < 0 || opt_port > 65535 || opt_workers < 0 || opt_max_size < 0) {
        printerr ("hash-service: --port must be 0 to 65535, --workers and --max-size positive or 0\n");
        return 2;
    }
    max_size = (uint64) opt_max_size;

    Ws.Runtime runtime;
    try {
        runtime = (Ws.Runtime) Object.new (typeof (Ws.Runtime),
                                           "n-workers", (uint) opt_workers,
                                           "thread-name-prefix", "service");
        runtime.init (null);
    } catch (Error e) {
        printerr ("hash-service: cannot start the runtime: %s\n", e.message);
        return 1;
    }

    var service = new SocketService ();
    SocketAddress effective;
    service.set_backlog (1024);
    try {
        service.add_address (new InetSocketAddress (new InetAddress.loopback (SocketFamily.IPV4),
                                                    (uint16) opt_port),
                             SocketType.STREAM, SocketProtocol.TCP, null, out effective);
    } catch (Error e) {
        printerr ("hash-service: cannot listen: %s\n", e.message);
        return 1;
    }

    /* On the main loop: hand the connection to a task, and go on
     * accepting. */
    service.incoming.connect ((connection, source) => {
        var conn = new Connection (connection);
        AtomicInt.inc (ref n_active);
        runtime.spawn_detached ((cx) => conn.poll (cx));
        return true;
    });

    var loop = new MainLoop ();
    SourceFunc stop = () => {
        /* Stop accepting; quit when the connections in progress have
         * ended, or after 5 s. */
        service.stop ();
        int64 deadline = get_monotonic_time () + 5 * TimeSpan.SECOND;
        Timeout.add (10, () => {
            if (AtomicInt.get (ref n_active) > 0 && get_monotonic_time () < deadline)
                return Source.CONTINUE;
            loop.quit ();
            return Source.REMOVE;
        });
        return Source.REMOVE;
    };
    Unix.signal_add (ProcessSignal.TERM, (owned) stop);
    Unix.signal_add (ProcessSignal.INT, () => { loop.quit (); return Source.REMOVE; });

    var address = (InetSocketAddress) effective;
    print ("listening on %s:%u\n", address.address.to_string (), address.port);
    stdout.flush ();
    service.start ();
    loop.run ();

    service.stop ();
    service.close ();
    bool clean = runtime.shutdown (5 * TimeSpan.SECOND);
    var metrics = runtime.get_metrics ();
    print ("served %d requests: %d ok, %d errors, %d connections lost; %llu tasks spawned, "
           + "%d cancelled at shutdown\n",
           AtomicInt.get (ref n_ok) + AtomicInt.get (ref n_errors), AtomicInt.get (ref n_ok),
           AtomicInt.get (ref n_errors), AtomicInt.get (ref n_failed),
           metrics.get_spawned_tasks (), AtomicInt.get (ref n_active));
    return clean ? 0 : 1;
}
