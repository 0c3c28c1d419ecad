// gjs tests of the extension's client (gnome-extension/src/client.js) against
// the real kfdguard service on a private system bus with a simulated machine.
//
// Run by tests/gnome/test_gjs_client.py, which sets:
//   DBUS_SYSTEM_BUS_ADDRESS  the private bus
//   KFDGUARD_MACHINE         the simulated machine's directory
//   KFDGUARD_SERVICE_ARGV    JSON: the command that runs the service on that bus
//                            (--no-enforce, so a broken permission stays broken)
// The service is not running at the start: the script starts, stops and
// restarts it itself. Output is TAP; the exit status is 0 when all passed.

import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import System from 'system';

import {GuardianClient, applicationLines, describe, format, formatBytes, hardwareLine, softwareLines} from '../../../gnome-extension/src/client.js';

Gio._promisify(Gio.Subprocess.prototype, 'wait_async');

const WAIT_MS = 15000;
const machine = GLib.getenv('KFDGUARD_MACHINE');
const serviceArgv = JSON.parse(GLib.getenv('KFDGUARD_SERVICE_ARGV') ?? 'null');
const _ = s => s;  // no translation in tests

const tests = [];
function test(name, fn) {
    tests.push({name, fn});
}

function assert(condition, message) {
    if (!condition)
        throw new Error(`assertion failed: ${message}`);
}

function assertEqual(actual, expected, what) {
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e)
        throw new Error(`${what}: expected ${e}, got ${a}`);
}

// Resolve when check(client) is true, re-evaluated only on the client's
// `changed` signal: a test that passes proves the client needs no polling.
function waitFor(client, check, what) {
    return new Promise((resolve, reject) => {
        let id = 0, timer = 0;
        const done = (ok, error) => {
            client.disconnect(id);
            GLib.source_remove(timer);
            if (ok)
                resolve();
            else
                reject(error);
        };
        id = client.connect('changed', () => {
            if (check(client))
                done(true);
        });
        timer = GLib.timeout_add(GLib.PRIORITY_DEFAULT, WAIT_MS, () => {
            timer = 0;
            client.disconnect(id);
            reject(new Error(`timed out waiting for ${what}; last view: ${JSON.stringify(describe(client.snapshot(), _))}`));
            return GLib.SOURCE_REMOVE;
        });
        if (check(client))
            done(true);
    });
}

function nextSignal(client, name) {
    return new Promise((resolve, reject) => {
        const timer = GLib.timeout_add(GLib.PRIORITY_DEFAULT, WAIT_MS, () => {
            client.disconnect(id);
            reject(new Error(`timed out waiting for ${name}`));
            return GLib.SOURCE_REMOVE;
        });
        const id = client.connect(name, (c, ...args) => {
            client.disconnect(id);
            GLib.source_remove(timer);
            resolve(args);
        });
    });
}

let service = null;

function startService() {
    service = Gio.Subprocess.new(serviceArgv, Gio.SubprocessFlags.NONE);
}

async function stopService() {
    service.send_signal(15);
    await service.wait_async(null);
    service = null;
}

// The simulated machine: device nodes live in .kfdguard-sim/devices, one
// "path kind major minor uid gid mode acl" line each; a line written to the
// uevent FIFO makes the service look again.
const devicesFile = `${machine}/.kfdguard-sim/devices`;

function readDevices() {
    return new TextDecoder().decode(GLib.file_get_contents(devicesFile)[1]);
}

function setDevice(path, uid, gid, mode) {
    const lines = readDevices().split('\n').map(line => {
        const f = line.split(' ');
        if (f[0] !== path)
            return line;
        f[4] = String(uid);
        f[5] = String(gid);
        f[6] = mode;
        return f.join(' ');
    });
    GLib.file_set_contents(devicesFile, lines.join('\n'));
}

function uevent(text) {
    const stream = Gio.File.new_for_path(`${machine}/.kfdguard-sim/uevent.fifo`)
        .append_to(Gio.FileCreateFlags.NONE, null);
    stream.write_all(new TextEncoder().encode(`${text}\n`), null);
    stream.close(null);
}

// --- describe(): pure ------------------------------------------------------------

test('describe: absent service is greyed, with a hint', () => {
    const view = describe({present: false, error: null}, _);
    assertEqual(view.label, 'GPU ?', 'label');
    assertEqual(view.styleClass, 'kfdguard-absent', 'style');
    assert(view.lines[0].includes('systemctl start kfdguard'), 'hint to start the service');
});

test('describe: every state has a short label; unknown states are shown as they are', () => {
    const base = {present: true, summary: 's', kernel: '', kfdVersion: '', version: '', lastCheck: null,
        devices: [], findings: []};
    const labels = ['ready', 'degraded', 'unavailable', 'no-device', 'error', 'starting', 'frobnicated']
        .map(state => describe({...base, state}, _).label);
    assertEqual(labels, ['GPU ready', 'GPU degraded', 'GPU not ready', 'No AMD GPU', 'GPU check failed',
        'GPU checking…', 'GPU frobnicated'], 'labels');
    const findings = describe({...base, state: 'degraded', findings: [
        {code: 'a', severity: 'info', message: 'm1', remedy: ''},
        {code: 'b', severity: 'notice', message: 'm2', remedy: ''},
        {code: 'c', severity: 'error', message: 'm3', remedy: 'fix it'},
        {code: 'd', severity: 'warning', message: 'm4', remedy: ''},
    ]}, _).findings.map(f => f.code);
    assertEqual(findings, ['c', 'd', 'a', 'b'], 'errors first, unknown severities last');
    assertEqual(format('Kernel %s, KFD %s', '6.8', '1.14'), 'Kernel 6.8, KFD 1.14', 'format');
});

test('describe: one Software line per stack, saying which GPU it has no code for', () => {
    const base = {present: true, state: 'ready', summary: 's', kernel: '', kfdVersion: '', version: '',
        lastCheck: null, devices: [], findings: []};
    // The Software property as kfdguard/service/status.py writes it (a(sssasas)).
    const software = [
        {name: 'PyTorch 2.4.1+rocm6.1', kind: 'pytorch', path: '/home/ada/venv/lib/python3.11/site-packages/torch',
            targets: ['gfx1030', 'gfx1100'], verdicts: ['0000:c4:00.0 gfx1103 no-code: no code for gfx1103 (nearest gfx1100)']},
        {name: 'ROCm 6.2.4', kind: 'rocm', path: '/opt/rocm', targets: ['gfx11-generic'],
            verdicts: ['0000:c4:00.0 gfx1103 runs-generic: code for gfx11-generic']},
        {name: 'ollama (bundled ROCm)', kind: 'ollama', path: '/usr/lib/ollama', targets: ['gfx1100'],
            verdicts: ['0000:c4:00.0 gfx1103 override: no code for gfx1103 (nearest gfx1100)']},
        {name: 'llama.cpp (libggml-hip.so)', kind: 'llama.cpp', path: '/opt/llama/libggml-hip.so', targets: ['gfx1030'],
            verdicts: []},
        {name: 'odd', kind: 'rocm', path: '/x', targets: [], verdicts: ['a verdict of a later service']},
    ];
    const view = describe({...base, software}, _);
    assertEqual(view.software, [
        {text: 'PyTorch 2.4.1+rocm6.1: no code for gfx1103', ok: false},
        {text: 'ROCm 6.2.4: runs on gfx1103', ok: true},
        {text: "ollama (bundled ROCm): no code for gfx1103 (runs a neighbour's with an override)", ok: false},
        {text: 'llama.cpp (libggml-hip.so): code for gfx1030', ok: true},
        {text: 'odd: a verdict of a later service', ok: false},
    ], 'software lines');
    assertEqual(describe({...base}, _).software, [], 'no Software property (an older service): no lines');
    assertEqual(softwareLines([{name: 'x', verdicts: ['0000:03:00.0 gfx1100 runs: code for gfx1100',
        '0000:0b:00.0 gfx1031 no-code: no code for gfx1031']}], _)[0].text,
    'x: runs on gfx1100; no code for gfx1031', 'two GPUs');
});

test('describe: one Applications line per application and GPU, with the fix when it runs on the CPU', () => {
    const base = {present: true, state: 'ready', summary: 's', kernel: '', kfdVersion: '', version: '',
        lastCheck: null, devices: [], findings: [], software: []};
    // The Applications property as kfdguard/service/status.py writes it (a(ssssss)).
    const applications = [
        {name: 'ollama 0.32.15', kind: 'ollama', slot: '0000:c4:00.0', via: 'CPU',
            detail: 'its bundled rocBLAS has no code for gfx1103; ollama drops an integrated GPU unless OLLAMA_IGPU_ENABLE=1 on Vulkan',
            remedy: 'systemctl edit ollama.service: [Service] Environment=OLLAMA_IGPU_ENABLE=1'},
        {name: 'llama.cpp (/usr/local/lib)', kind: 'llama.cpp', slot: '0000:c4:00.0', via: 'Vulkan', detail: 'RADV; no HIP backend', remedy: ''},
        {name: 'odd', kind: 'x', slot: '0000:c4:00.0', via: 'NPU', detail: 'a later service', remedy: ''},
    ];
    assertEqual(describe({...base, applications}, _).applications, [
        {text: 'ollama 0.32.15: on the CPU (its bundled rocBLAS has no code for gfx1103; ollama drops an integrated GPU unless OLLAMA_IGPU_ENABLE=1 on Vulkan)',
            ok: false, remedy: 'systemctl edit ollama.service: [Service] Environment=OLLAMA_IGPU_ENABLE=1'},
        {text: 'llama.cpp (/usr/local/lib): on the GPU through Vulkan', ok: true, remedy: ''},
        {text: 'odd: NPU (a later service)', ok: false, remedy: ''},
    ], 'application lines');
    assertEqual(describe({...base}, _).applications, [], 'no Applications property (an older service): no lines');
    const two = applicationLines([
        {name: 'PyTorch 2.9.0', slot: '0000:03:00.0', via: 'ROCm', detail: 'code for gfx1100', remedy: ''},
        {name: 'PyTorch 2.9.0', slot: '0000:0b:00.0', via: 'CPU', detail: 'no code for gfx1031', remedy: 'pip'},
    ], _);
    assertEqual(two.map(l => l.text), ['PyTorch 2.9.0 (0000:03:00.0): on the GPU through ROCm',
        'PyTorch 2.9.0 (0000:0b:00.0): on the CPU (no code for gfx1031)'], 'two GPUs: the slot tells them apart');
});

// --- against the service ---------------------------------------------------------

const client = new GuardianClient();

test('hardwareLine: what the service sent, the narrow link beside what the card can do', () => {
    assertEqual(hardwareLine({Integrated: false, VramTotal: 8 * 2 ** 30, ComputeUnits: 36, PcieSpeed: 8000,
        PcieWidth: 4, PcieMaxSpeed: 8000, PcieMaxWidth: 16}, _),
    'Discrete · 8.0 GiB VRAM · 36 CUs · PCIe 8.0 GT/s x4 (can do 8.0 GT/s x16)', 'narrow slot');
    assertEqual(hardwareLine({Integrated: true, VramTotal: 512 * 2 ** 20, GttTotal: 16 * 2 ** 30}, _),
        'Integrated (APU) · 512.0 MiB carve-out · 16.0 GiB GTT', 'APU');
    // Issue 38: what compute may allocate and the TTM limit; a card whose VRAM says it gets no repeat.
    assertEqual(hardwareLine({Integrated: true, VramTotal: 512 * 2 ** 20, GttTotal: 16 * 2 ** 30,
        ComputeMemory: 16 * 2 ** 30, TtmLimit: 16 * 2 ** 30}, _),
    'Integrated (APU) · 512.0 MiB carve-out · 16.0 GiB GTT · 16.0 GiB for compute · TTM limit 16.0 GiB', 'APU memory');
    assertEqual(hardwareLine({Integrated: false, VramTotal: 8 * 2 ** 30, ComputeMemory: 8 * 2 ** 30}, _),
        'Discrete · 8.0 GiB VRAM', 'card memory once');
    assertEqual(hardwareLine({ComputeMemory: 'lots', TtmLimit: -5}, _), '', 'garbage memory');
    // An older service sends none of the keys; a broken one sends other types: nothing is made up.
    assertEqual(hardwareLine({Slot: '0000:03:00.0'}, _), '', 'older service');
    assertEqual(hardwareLine({Integrated: 'yes', VramTotal: -1, ComputeUnits: 'many', PcieSpeed: NaN}, _), '', 'garbage');
    assertEqual(formatBytes(25753026560), '24.0 GiB', '24 GiB card');
    assertEqual(formatBytes(1000), '1000 B', 'bytes');
});

test('no service on the bus: absent', async () => {
    await waitFor(client, c => c._proxy !== null, 'the proxy');
    assertEqual(client.present, false, 'present');
    assertEqual(describe(client.snapshot(), _).label, 'GPU ?', 'label');
    let error = null;
    await client.checkAccess().catch(e => {
        error = e;
    });
    assert(error && error.message.includes('not running'), `CheckAccess without the service: ${error}`);
});

test('the service appears: ready, with the GPU and its gfx target', async () => {
    startService();
    await waitFor(client, c => c.present && c.snapshot().state === 'ready', 'state ready');
    const snap = client.snapshot();
    assertEqual(snap.ready, true, 'Ready');
    assertEqual(snap.kernel, '6.8.0-45-generic', 'KernelRelease');
    assertEqual(snap.kfdVersion, '1.14', 'KfdVersion');
    assert(snap.lastCheck !== null, 'LastCheck');
    const view = describe(snap, _);
    assertEqual(view.label, 'GPU ready', 'label');
    assertEqual(view.styleClass, 'kfdguard-ready', 'style');
    // The hardware line is what the simulated machine's sysfs says (kfdguard/simulate/hardware.py):
    // 24 GiB, 96 CUs, PCIe 4.0 x16; GTT half of its 32 GiB under 6.8.
    assertEqual(view.devices, [{title: 'AMD Radeon RX 7900 XTX', detail: 'gfx1100 · ready',
        hardware: 'Discrete · 24.0 GiB VRAM · 16.0 GiB GTT · 96 CUs · PCIe 16.0 GT/s x16', ready: true}], 'devices');
    assertEqual(view.lines, ['Kernel 6.8.0-45-generic, KFD 1.14'], 'detail lines');
    assert(view.title.startsWith('1 GPU can compute'), `summary: ${view.title}`);
});

test('CheckAccess answers for the caller', async () => {
    const [allowed, explanation] = await client.checkAccess();
    assertEqual(typeof allowed, 'boolean', 'allowed');
    assert(explanation.includes('/dev/kfd'), `explanation: ${explanation}`);
});

let healthyDevices = null;

test('a permission problem: StateChanged and the properties follow, with remedies', async () => {
    healthyDevices = readDevices();
    const signal = nextSignal(client, 'state-changed');
    setDevice('/dev/kfd', 0, 0, '0600');
    uevent('change kfd kfd');
    const [oldState, newState, summary] = await signal;
    assertEqual([oldState, newState], ['ready', 'unavailable'], 'StateChanged');
    assert(summary.includes('/dev/kfd'), `StateChanged summary: ${summary}`);
    await waitFor(client, c => c.snapshot().state === 'unavailable', 'state unavailable');
    const view = describe(client.snapshot(), _);
    assertEqual(view.label, 'GPU not ready', 'label');
    assertEqual(view.styleClass, 'kfdguard-unavailable', 'style');
    assertEqual(view.devices[0].ready, false, 'device not ready');
    assert(view.devices[0].detail.startsWith('gfx1100 · '), `device detail: ${view.devices[0].detail}`);
    const perm = view.findings.find(f => f.code === 'device-permissions');
    assert(perm, `a device-permissions finding in ${JSON.stringify(view.findings)}`);
    assertEqual(perm.severity, 'error', 'severity');
    assert(perm.remedy.includes('kfdguard enforce'), `remedy: ${perm.remedy}`);
    assertEqual(view.findings[0].code, 'device-permissions', 'errors first');
    assert(/^Since \d\d:\d\d:\d\d; before: GPU ready$/.test(view.lines[1]), `the transition: ${view.lines}`);
});

test('Reload (root is allowed without polkit) returns the state after the check', async () => {
    const state = await client.reload();
    assertEqual(state, 'unavailable', 'Reload');
});

test('the machine is repaired: back to ready', async () => {
    const signal = nextSignal(client, 'state-changed');
    GLib.file_set_contents(devicesFile, healthyDevices);
    uevent('change kfd kfd');
    const [oldState, newState] = await signal;
    assertEqual([oldState, newState], ['unavailable', 'ready'], 'StateChanged');
    await waitFor(client, c => c.snapshot().state === 'ready', 'state ready');
});

test('the service stops: absent again', async () => {
    await stopService();
    await waitFor(client, c => !c.present, 'the name to vanish');
    assertEqual(describe(client.snapshot(), _).label, 'GPU ?', 'label');
});

test('the service comes back: the client recovers', async () => {
    startService();
    await waitFor(client, c => c.present && c.snapshot().state === 'ready', 'state ready again');
    const view = describe(client.snapshot(), _);
    assertEqual(view.label, 'GPU ready', 'label');
    assertEqual(view.lines, ['Kernel 6.8.0-45-generic, KFD 1.14'], 'no transition from the earlier process');
});

async function main() {
    print(`1..${tests.length}`);
    let failed = 0;
    for (const [i, t] of tests.entries()) {
        try {
            await t.fn();
            print(`ok ${i + 1} - ${t.name}`);
        } catch (e) {
            failed++;
            print(`not ok ${i + 1} - ${t.name}`);
            for (const line of `${e}\n${e.stack ?? ''}`.trim().split('\n'))
                print(`# ${line}`);
        }
    }
    if (service)
        await stopService();
    client.destroy();
    return failed;
}

const loop = new GLib.MainLoop(null, false);
let status = 1;
main().then(failed => {
    status = failed ? 1 : 0;
}).catch(e => {
    print(`Bail out! ${e}\n${e.stack}`);
}).finally(() => loop.quit());
loop.run();
System.exit(status);
