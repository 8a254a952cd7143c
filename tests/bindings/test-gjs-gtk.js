// test-gjs-gtk.js: a GTK 4 window keeps drawing while 100,000 local tasks run
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Run under Xvfb by meson test. Local tasks are polled by a GSource on the
// main context in bounded slices, so the frame clock keeps ticking while
// they run. Timing is left to the benchmarks; this checks that frames were
// produced during the flood, not after it.

import GLib from 'gi://GLib';
import Gtk from 'gi://Gtk?version=4.0';
import Ws from 'gi://Ws?version=1';

import {test, assert, assertEqual, iterateUntil, run} from './tap.js';

const N_TASKS = 100000;

test('the frame clock ticks while 100,000 local tasks run', async () => {
    Gtk.init();
    const rt = Ws.Runtime.new(1);
    const window = new Gtk.Window({title: 'wsrt', default_width: 200, default_height: 100});
    const area = new Gtk.DrawingArea();
    window.set_child(area);

    let ticks = 0;
    let ticksDuringFlood = 0;
    let done = 0;
    area.add_tick_callback(() => {
        ticks++;
        if (done > 0 && done < N_TASKS)
            ticksDuringFlood++;
        return GLib.SOURCE_CONTINUE;
    });
    window.present();
    iterateUntil(() => ticks >= 2);

    for (let i = 0; i < N_TASKS; i++) {
        let polled = false;
        rt.spawn_local_detached(null, cx => {
            if (!polled) {
                polled = true;
                return cx.yield();
            }
            done++;
            return Ws.Poll.READY;
        });
    }
    iterateUntil(() => done === N_TASKS);
    print(`# ${ticks} frames in all, ${ticksDuringFlood} while the tasks ran`);
    assertEqual(done, N_TASKS, 'every task ran');
    assert(ticksDuringFlood >= 3, `frames during the flood (${ticksDuringFlood})`);
    window.destroy();
    assert(rt.shutdown(-1), 'shutdown');
});

run();
