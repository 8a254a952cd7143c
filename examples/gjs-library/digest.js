// digest.js: prints the SHA-256 of each file given, computed on the wsrt
// pool by the WsDigest library next to this script, then cancels one
// digest of a file that never ends (/dev/zero) to show that cancelling
// reaches the native job.
//
//   GI_TYPELIB_PATH=_build LD_LIBRARY_PATH=_build gjs -m digest.js FILE...
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import System from 'system';
import Ws from 'gi://Ws?version=1';
import WsDigest from 'gi://WsDigest?version=1';

Gio._promisify(Ws.Task.prototype, 'wait_async', 'wait_finish');

const rt = Ws.Runtime.get_default();
const loop = new GLib.MainLoop(null, false);
let status = 0;

async function main(paths) {
    const tasks = paths.map(p =>
        WsDigest.hash_file(rt, Gio.File.new_for_path(p), GLib.ChecksumType.SHA256));
    for (const [i, task] of tasks.entries()) {
        await task.wait_async(null);
        print(`${task.get_value()}  ${paths[i]}`);
    }

    const endless = WsDigest.hash_file(rt, Gio.File.new_for_path('/dev/zero'),
        GLib.ChecksumType.SHA256);
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, () => {
        endless.cancel();
        return GLib.SOURCE_REMOVE;
    });
    try {
        await endless.wait_async(null);
        throw new Error('the digest of /dev/zero ended');
    } catch (e) {
        if (!(e instanceof GLib.Error) ||
            !e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED))
            throw e;
        print('cancelled: /dev/zero');
    }
}

main(ARGV).catch(e => {
    printerr(`digest.js: ${e.message}`);
    status = 1;
}).finally(() => loop.quit());
loop.run();
rt.shutdown(-1);
if (status !== 0)
    System.exit(status);
