// app.js: a GTK 4 app in JavaScript that drives native work on wsrt
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The window counts the primes below a number. The counting is native: C
// functions of the WsExample library start tasks on the wsrt workers and
// return them (WsTask); this script awaits them on the main loop
// (primes.js), moves a progress bar as they end, shows the workers' polls
// and steals, and cancels the tasks still running when asked.
//
//   gjs -m app.js                       the window
//   gjs -m app.js --headless LIMIT      the same work without a window,
//                                       progress on stdout
//   gjs -m app.js --headless LIMIT --cancel-after N
//                                       ... cancelled after N tasks ended
//   gjs -m app.js --self-test           the window, driven by a script:
//                                       count, then start and cancel
//
// It needs the typelibs of Ws and WsExample and their libraries; from a
// checkout, `meson devenv -C _build -w . gjs -m examples/gjs/app.js`
// sets GI_TYPELIB_PATH and LD_LIBRARY_PATH.

import GLib from 'gi://GLib';
import Gio from 'gi://Gio';
import Gtk from 'gi://Gtk?version=4.0';
import Ws from 'gi://Ws?version=1';
import WsExample from 'gi://WsExample?version=1';
import System from 'system';

import {countPrimes, describeWorkers} from './primes.js';

const DEFAULT_LIMIT = 5000000;

function runHeadless(limit, cancelAfter) {
    const runtime = Ws.Runtime.new(0);
    const loop = new GLib.MainLoop(null, false);
    const cancellable = new Gio.Cancellable();
    const startTime = GLib.get_monotonic_time();
    const seconds = () => ((GLib.get_monotonic_time() - startTime) / 1e6).toFixed(3);
    let status = 0;

    countPrimes(runtime, limit, {
        cancellable,
        onProgress: (done, total) => {
            print(`${seconds()} s: ${done} / ${total} tasks`);
            if (done === cancelAfter)
                cancellable.cancel();
        },
    }).then(count => {
        print(`${count} primes below ${limit} (${seconds()} s)`);
    }).catch(e => {
        if (e.matches?.(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED)) {
            print(`cancelled after ${seconds()} s; numbers tested: ` +
                  `${WsExample.get_numbers_tested()} of ${limit}`);
        } else {
            printerr(`app.js: ${e.message}`);
            status = 1;
        }
    }).finally(() => {
        print(describeWorkers(runtime));
        loop.quit();
    });

    loop.run();
    if (!runtime.shutdown(-1))
        status = 1;
    return status;
}

// Resolves after @ms milliseconds of main loop.
function sleep(ms) {
    return new Promise(resolve => GLib.timeout_add(GLib.PRIORITY_DEFAULT, ms, () => {
        resolve();
        return GLib.SOURCE_REMOVE;
    }));
}

// --self-test: presses the window's buttons and checks what it shows.
async function selfTest(window, {limitEntry, startButton, cancelButton, result}) {
    const idle = async () => {
        while (!startButton.sensitive)
            await sleep(10);
    };

    limitEntry.set_value(1000000);
    startButton.emit('clicked');
    await idle();
    print(`self-test: count: ${result.label}`);
    if (!result.label.startsWith('78498 primes below 1000000'))
        throw new Error(`wrong count: ${result.label}`);

    limitEntry.set_value(500000000);
    startButton.emit('clicked');
    await sleep(100);
    cancelButton.emit('clicked');
    await idle();
    print(`self-test: cancel: ${result.label}`);
    if (!result.label.startsWith('Cancelled'))
        throw new Error(`not cancelled: ${result.label}`);
}

function runWindow(runSelfTest) {
    const runtime = Ws.Runtime.new(0);
    let failed = false;
    const app = new Gtk.Application({
        application_id: 'org.wsrt.GjsExample',
        flags: Gio.ApplicationFlags.NON_UNIQUE,
    });

    app.connect('activate', () => {
        const window = new Gtk.ApplicationWindow({application: app, title: 'wsrt from GJS', default_width: 480});
        const box = new Gtk.Box({orientation: Gtk.Orientation.VERTICAL, spacing: 6,
            margin_top: 12, margin_bottom: 12, margin_start: 12, margin_end: 12});
        const row = new Gtk.Box({spacing: 6});
        const limitEntry = new Gtk.SpinButton({
            adjustment: new Gtk.Adjustment({lower: 2, upper: 1e9, step_increment: 1e6, value: DEFAULT_LIMIT}),
            hexpand: true,
        });
        const startButton = new Gtk.Button({label: 'Count primes'});
        const cancelButton = new Gtk.Button({label: 'Cancel', sensitive: false});
        const progress = new Gtk.ProgressBar({show_text: true});
        const result = new Gtk.Label({xalign: 0, label: 'Primes below the number, counted on the wsrt pool.'});
        const workers = new Gtk.Label({xalign: 0, ellipsize: 3 /* END */, max_width_chars: 1});

        row.append(limitEntry);
        row.append(startButton);
        row.append(cancelButton);
        box.append(row);
        box.append(progress);
        box.append(result);
        box.append(workers);
        window.set_child(box);

        let cancellable = null;
        startButton.connect('clicked', async () => {
            const limit = limitEntry.get_value();
            const startTime = GLib.get_monotonic_time();
            cancellable = new Gio.Cancellable();
            startButton.sensitive = false;
            cancelButton.sensitive = true;
            progress.fraction = 0;
            progress.text = 'starting';
            try {
                const count = await countPrimes(runtime, limit, {
                    cancellable,
                    onProgress: (done, total) => {
                        progress.fraction = done / total;
                        progress.text = `${done} / ${total} tasks`;
                    },
                });
                const ms = (GLib.get_monotonic_time() - startTime) / 1000;
                result.label = `${count} primes below ${limit} (${ms.toFixed(0)} ms)`;
            } catch (e) {
                result.label = e.matches?.(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED)
                    ? 'Cancelled: the tasks still running were stopped.'
                    : `Failed: ${e.message}`;
            }
            startButton.sensitive = true;
            cancelButton.sensitive = false;
        });
        cancelButton.connect('clicked', () => cancellable?.cancel());

        // The live line: every worker's polls and steals.
        const tick = GLib.timeout_add(GLib.PRIORITY_DEFAULT, 250, () => {
            workers.label = describeWorkers(runtime);
            return GLib.SOURCE_CONTINUE;
        });
        window.connect('destroy', () => {
            cancellable?.cancel();
            GLib.source_remove(tick);
        });
        window.present();

        if (runSelfTest) {
            selfTest(window, {limitEntry, startButton, cancelButton, result}).catch(e => {
                printerr(`self-test: ${e.message}`);
                failed = true;
            }).finally(() => window.close());
        }
    });

    if (runSelfTest) {
        GLib.timeout_add_seconds(GLib.PRIORITY_HIGH, 60, () => {
            printerr('self-test: no end after 60 s');
            System.exit(1);
        });
    }
    const status = app.run([System.programInvocationName]);
    if (!runtime.shutdown(-1))
        failed = true;
    return status !== 0 ? status : failed ? 1 : 0;
}

const args = System.programArgs;
if (args[0] === '--headless') {
    const limit = Number(args[1] ?? DEFAULT_LIMIT);
    const cancelAt = args.indexOf('--cancel-after');
    const cancelAfter = cancelAt >= 0 ? Number(args[cancelAt + 1]) : -1;
    System.exit(runHeadless(limit, cancelAfter));
} else {
    System.exit(runWindow(args[0] === '--self-test'));
}
