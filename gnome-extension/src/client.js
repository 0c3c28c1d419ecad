// kfdguard GNOME Shell extension: the client of org.kfdguard.Guardian1.
//
// Everything here runs in plain gjs too (no Shell, St or Clutter imports): the
// tests drive it against the real service on a private bus. The indicator
// (indicator.js) only renders what describe() returns.
//
// Written as an ES module; build.sh rewrites the imports and exports for the
// legacy `imports` loader of GNOME 43/44.

import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import GObject from 'gi://GObject';

export const BUS_NAME = 'org.kfdguard.Guardian1';
export const OBJECT_PATH = '/org/kfdguard/Guardian1';
export const INTERFACE_NAME = 'org.kfdguard.Guardian1';

// The part of dbus/org.kfdguard.Guardian1.xml this client uses (a test checks
// that it agrees with the contract).
export const INTERFACE_XML = `<node>
  <interface name="org.kfdguard.Guardian1">
    <property name="Version" type="s" access="read"/>
    <property name="State" type="s" access="read"/>
    <property name="Ready" type="b" access="read"/>
    <property name="Summary" type="s" access="read"/>
    <property name="KernelRelease" type="s" access="read"/>
    <property name="KfdVersion" type="s" access="read"/>
    <property name="Devices" type="aa{sv}" access="read"/>
    <property name="Findings" type="a(ssss)" access="read"/>
    <property name="LastCheck" type="t" access="read"/>
    <property name="Software" type="a(sssasas)" access="read"/>
    <property name="Applications" type="a(ssssss)" access="read"/>
    <method name="CheckAccess">
      <arg name="allowed" type="b" direction="out"/>
      <arg name="explanation" type="s" direction="out"/>
    </method>
    <method name="Reload">
      <arg name="state" type="s" direction="out"/>
    </method>
    <signal name="StateChanged">
      <arg name="old" type="s"/>
      <arg name="new" type="s"/>
      <arg name="summary" type="s"/>
    </signal>
  </interface>
</node>`;

// Reload runs a full check and may wait for a polkit password prompt.
const RELOAD_TIMEOUT_MS = 120 * 1000;
const CALL_TIMEOUT_MS = 25 * 1000;

const SEVERITY_ORDER = {error: 0, warning: 1, info: 2};

/**
 * Replace each %s in order: translations keep printf-style placeholders, and
 * String.prototype.format exists only inside the Shell.
 *
 * @param {string} template - a translated string
 * @param {...string} args - the values
 * @returns {string} the text
 */
export function format(template, ...args) {
    let i = 0;
    return template.replace(/%s/g, () => String(args[i++] ?? ''));
}

function unpack(proxy, name, fallback) {
    const value = proxy.get_cached_property(name);
    return value === null ? fallback : value.recursiveUnpack();
}

/**
 * The service's message for an error: D-Bus error names are for programs.
 *
 * @param {Error} error - what a call threw
 * @returns {string} the text for people
 */
export function errorMessage(error) {
    if (error instanceof GLib.Error) {
        if (Gio.DBusError.is_remote_error(error))
            Gio.DBusError.strip_remote_error(error);
        return error.message;
    }
    return String(error?.message ?? error);
}

/**
 * A GObject that follows the service: emits `changed` whenever what it knows
 * changes (the service appears or goes away, properties change) and
 * `state-changed` (old, new, summary) on the service's StateChanged signal.
 * It never polls: GDBusProxy keeps the properties from PropertiesChanged and
 * reloads them when the name gets a new owner.
 */
export const GuardianClient = GObject.registerClass({
    Signals: {
        'changed': {},
        'state-changed': {param_types: [GObject.TYPE_STRING, GObject.TYPE_STRING, GObject.TYPE_STRING]},
    },
}, class GuardianClient extends GObject.Object {
    /**
     * @param {object} params
     * @param {Gio.DBusConnection} [params.connection] - the bus; the system bus by default
     */
    _init(params = {}) {
        super._init();
        this._cancellable = new Gio.Cancellable();
        this._proxy = null;
        this._proxyError = null;
        this._lastTransition = null;
        const info = Gio.DBusNodeInfo.new_for_xml(INTERFACE_XML).lookup_interface(INTERFACE_NAME);
        const args = [
            Gio.DBusProxyFlags.DO_NOT_AUTO_START,
            info, BUS_NAME, OBJECT_PATH, INTERFACE_NAME, this._cancellable,
            (source, result) => this._onProxy(result),
        ];
        if (params.connection)
            Gio.DBusProxy.new(params.connection, ...args);
        else
            Gio.DBusProxy.new_for_bus(Gio.BusType.SYSTEM, ...args);
    }

    _onProxy(result) {
        let proxy;
        try {
            proxy = Gio.DBusProxy.new_finish(result);
        } catch (e) {
            if (e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED))
                return;
            // No system bus at all: stay absent, with the reason in the menu.
            this._proxyError = errorMessage(e);
            this.emit('changed');
            return;
        }
        this._proxy = proxy;
        this._signalIds = [
            proxy.connect('g-properties-changed', () => this.emit('changed')),
            // GDBusProxy fetches the properties of a new owner before it notifies.
            proxy.connect('notify::g-name-owner', () => {
                // A new service process starts its own history.
                this._lastTransition = null;
                this.emit('changed');
            }),
            proxy.connect('g-signal', (p, sender, name, parameters) => {
                if (name !== 'StateChanged')
                    return;
                const [oldState, newState, summary] = parameters.deepUnpack();
                this._lastTransition = {oldState, newState, summary, time: GLib.DateTime.new_now_local()};
                this.emit('state-changed', oldState, newState, summary);
                // The service sends PropertiesChanged first: the views need the transition too.
                this.emit('changed');
            }),
        ];
        this.emit('changed');
    }

    /** True when the service owns its name and its properties are known. */
    get present() {
        return this._proxy !== null && this._proxy.g_name_owner !== null &&
            this._proxy.get_cached_property('State') !== null;
    }

    /**
     * What the service says now, as plain values.
     *
     * @returns {object} present, state, ready, summary, kernel, kfdVersion,
     *   devices, findings, software, version, lastCheck (GLib.DateTime or
     *   null), transition, error
     */
    snapshot() {
        const base = {present: false, error: this._proxyError, transition: this._lastTransition};
        if (!this.present)
            return base;
        const p = this._proxy;
        const lastCheck = unpack(p, 'LastCheck', 0);
        return {
            ...base,
            present: true,
            state: unpack(p, 'State', ''),
            ready: unpack(p, 'Ready', false),
            summary: unpack(p, 'Summary', ''),
            kernel: unpack(p, 'KernelRelease', ''),
            kfdVersion: unpack(p, 'KfdVersion', ''),
            version: unpack(p, 'Version', ''),
            // LastCheck is in microseconds: a JS number holds it exactly (2^53 µs is the year 2255).
            lastCheck: lastCheck ? GLib.DateTime.new_from_unix_local(Math.floor(Number(lastCheck) / 1e6)) : null,
            devices: unpack(p, 'Devices', []),
            findings: unpack(p, 'Findings', []).map(([code, severity, message, remedy]) =>
                ({code, severity, message, remedy})),
            // Empty until the service's first scan after start-up (a service older than the
            // property has none: the same empty list).
            software: unpack(p, 'Software', []).map(([name, kind, path, targets, verdicts]) =>
                ({name, kind, path, targets, verdicts})),
            // Which backend each application takes on each GPU (issue 37); empty like Software.
            applications: unpack(p, 'Applications', []).map(([name, kind, slot, via, detail, remedy]) =>
                ({name, kind, slot, via, detail, remedy})),
        };
    }

    _call(method, flags, timeout) {
        if (!this.present)
            return Promise.reject(new Error('kfdguard is not running'));
        return new Promise((resolve, reject) => {
            this._proxy.call(method, null, flags, timeout, this._cancellable, (proxy, result) => {
                try {
                    resolve(proxy.call_finish(result).deepUnpack());
                } catch (e) {
                    reject(new Error(errorMessage(e)));
                }
            });
        });
    }

    /**
     * Can the calling user open /dev/kfd and the render nodes?
     *
     * @returns {Promise<[boolean, string]>} allowed and the service's explanation
     */
    checkAccess() {
        return this._call('CheckAccess', Gio.DBusCallFlags.NONE, CALL_TIMEOUT_MS);
    }

    /**
     * Re-read the configuration and check again; polkit may ask for a password.
     *
     * @returns {Promise<string>} the state after the check
     */
    async reload() {
        const [state] = await this._call('Reload', Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION,
            RELOAD_TIMEOUT_MS);
        return state;
    }

    destroy() {
        this._cancellable.cancel();
        if (this._proxy) {
            for (const id of this._signalIds)
                this._proxy.disconnect(id);
            this._proxy = null;
        }
    }
});

const STATES = {
    // Symbolic icons in both Debian 12's Adwaita (43) and Debian 13's (48), which no longer has
    // emblem-ok-symbolic: tests/gnome/test_extension_build.py checks every name against both.
    'ready': {icon: 'object-select-symbolic', style: 'kfdguard-ready'},
    'degraded': {icon: 'dialog-warning-symbolic', style: 'kfdguard-degraded'},
    'unavailable': {icon: 'dialog-error-symbolic', style: 'kfdguard-unavailable'},
    'no-device': {icon: 'action-unavailable-symbolic', style: 'kfdguard-no-device'},
    'error': {icon: 'dialog-error-symbolic', style: 'kfdguard-error'},
    'starting': {icon: 'content-loading-symbolic', style: 'kfdguard-starting'},
};

/**
 * The panel label for a state of the service.
 *
 * @param {string} state - the State property
 * @param {Function} _ - gettext
 * @returns {string} a short label
 */
export function stateLabel(state, _) {
    switch (state) {
    case 'ready':
        return _('GPU ready');
    case 'degraded':
        return _('GPU degraded');
    case 'unavailable':
        return _('GPU not ready');
    case 'no-device':
        return _('No AMD GPU');
    case 'error':
        return _('GPU check failed');
    case 'starting':
        return _('GPU checking…');
    default:
        // The contract keeps the set open: show a new state as it is.
        return `GPU ${state}`;
    }
}

function severityLabel(severity, _) {
    switch (severity) {
    case 'error':
        return _('error');
    case 'warning':
        return _('warning');
    case 'info':
        return _('info');
    default:
        return severity;
    }
}

// One verdict of the Software property: "<slot> <gfx> <status>: <detail>" (kfdguard/service/status.py).
const VERDICT = /^(\S+) (\S+) ([a-z-]+): (.*)$/;

/**
 * One line per installed compute stack: "PyTorch 2.4.1+rocm6.1: no code for gfx1103".
 *
 * @param {Array<object>} software - snapshot().software
 * @param {Function} _ - gettext
 * @returns {Array<object>} [{text, ok}]: ok when every GPU has code in it
 */
export function softwareLines(software, _) {
    return (software ?? []).map(stack => {
        const parts = [];
        let ok = true;
        for (const verdict of stack.verdicts ?? []) {
            const m = VERDICT.exec(verdict);
            if (!m) {
                // A verdict of a newer service, in a shape this one does not know: shown as it is.
                parts.push(verdict);
                ok = false;
                continue;
            }
            const [, , gfx, status] = m;
            if (status === 'runs' || status === 'runs-generic') {
                parts.push(format(_('runs on %s'), gfx));
            } else {
                ok = false;
                if (status === 'no-code')
                    parts.push(format(_('no code for %s'), gfx));
                else if (status === 'override')
                    parts.push(format(_('no code for %s (runs a neighbour\'s with an override)'), gfx));
                else
                    parts.push(format(_('%s: targets unknown'), gfx));
            }
        }
        const text = parts.length > 0 ? `${stack.name}: ${parts.join('; ')}`
            : format(_('%s: code for %s'), stack.name, (stack.targets ?? []).join(' ') || _('no known target'));
        return {text, ok};
    });
}

/**
 * One line per application and GPU: "ollama 0.32.15: on the GPU through Vulkan", or why it runs on the CPU.
 *
 * @param {Array<object>} applications - snapshot().applications
 * @param {Function} _ - gettext
 * @returns {Array<object>} [{text, ok, remedy}]: ok when the application uses the GPU
 */
export function applicationLines(applications, _) {
    const list = applications ?? [];
    // The slot only matters when there is more than one GPU to tell apart.
    const slots = new Set(list.map(a => a.slot));
    return list.map(a => {
        const who = slots.size > 1 ? `${a.name} (${a.slot})` : a.name;
        if (a.via === 'ROCm' || a.via === 'Vulkan')
            return {text: format(_('%s: on the GPU through %s'), who, a.via), ok: true, remedy: ''};
        if (a.via === 'CPU')
            return {text: format(_('%s: on the CPU (%s)'), who, a.detail), ok: false, remedy: a.remedy ?? ''};
        // A path of a newer service, in a word this one does not know: shown as it is.
        return {text: `${who}: ${a.via} (${a.detail})`, ok: false, remedy: a.remedy ?? ''};
    });
}

/**
 * A size in binary units with one decimal, as `kfdguard check` prints it: "24.0 GiB".
 *
 * @param {number} bytes - a byte count
 * @returns {string} the size for people
 */
export function formatBytes(bytes) {
    let value = bytes;
    for (const unit of ['B', 'KiB', 'MiB', 'GiB']) {
        if (value < 1024)
            return unit === 'B' ? `${value} B` : `${value.toFixed(1)} ${unit}`;
        value /= 1024;
    }
    return `${value.toFixed(1)} TiB`;
}

// A Devices number the service sent (u or t), or null: a newer or older service may leave any out.
function count(d, key) {
    const value = d[key];
    return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

function linkText(speed, width) {
    // MT/s to "16.0 GT/s", as kfdguard/parsers/pcie.py format_speed does.
    const parts = [];
    if (speed !== null)
        parts.push(`${Math.floor(speed / 1000)}.${Math.floor(speed % 1000 / 100)} GT/s`);
    if (width !== null)
        parts.push(`x${width}`);
    return parts.join(' ');
}

/**
 * What a GPU is, from its Devices keys: "Discrete · 24.0 GiB VRAM · 16.0 GiB GTT · 96 CUs ·
 * PCIe 16.0 GT/s x16"; an APU's also "29.3 GiB for compute · TTM limit 29.3 GiB" (issue 38);
 * "" when the service says none of it.
 *
 * @param {object} d - one Devices dictionary, unpacked
 * @param {Function} _ - gettext
 * @returns {string} the line
 */
export function hardwareLine(d, _) {
    const parts = [];
    if (typeof d.Integrated === 'boolean')
        parts.push(d.Integrated ? _('Integrated (APU)') : _('Discrete'));
    const vram = count(d, 'VramTotal'), gtt = count(d, 'GttTotal'), cus = count(d, 'ComputeUnits');
    // An APU's VRAM is the firmware's carve-out of system memory.
    if (vram !== null)
        parts.push(format(d.Integrated === true ? _('%s carve-out') : _('%s VRAM'), formatBytes(vram)));
    if (gtt !== null)
        parts.push(format(_('%s GTT'), formatBytes(gtt)));
    // What ROCm tells programs they may allocate, and an APU's TTM limit (issue 38).
    const compute = count(d, 'ComputeMemory'), ttm = count(d, 'TtmLimit');
    if (compute !== null && compute !== vram) // a card's VRAM says it already
        parts.push(format(_('%s for compute'), formatBytes(compute)));
    if (ttm !== null)
        parts.push(format(_('TTM limit %s'), formatBytes(ttm)));
    if (cus !== null)
        parts.push(format(_('%s CUs'), cus));
    const speed = count(d, 'PcieSpeed'), width = count(d, 'PcieWidth');
    const maxSpeed = count(d, 'PcieMaxSpeed'), maxWidth = count(d, 'PcieMaxWidth');
    if (speed !== null || width !== null) {
        const now = format(_('PCIe %s'), linkText(speed, width));
        const below = (speed ?? 0) < (maxSpeed ?? 0) || (width ?? 0) < (maxWidth ?? 0);
        parts.push(below ? format(_('%s (can do %s)'), now, linkText(maxSpeed, maxWidth)) : now);
    }
    return parts.join(' · ');
}

/**
 * What the indicator shows for a snapshot: pure, so tests check it directly.
 *
 * @param {object} snap - GuardianClient.snapshot()
 * @param {Function} _ - gettext
 * @returns {object} label, iconName, styleClass, present, title, lines,
 *   devices [{title, detail, hardware, ready}], findings [{severity, severityLabel,
 *   code, message, remedy}], software [{text, ok}], applications [{text, ok, remedy}], footer
 */
export function describe(snap, _) {
    if (!snap.present) {
        return {
            present: false,
            label: _('GPU ?'),
            iconName: 'dialog-question-symbolic',
            styleClass: 'kfdguard-absent',
            title: _('kfdguard is not running'),
            lines: [snap.error ? snap.error
                : _('The kfdguard service does not answer on the system bus. Start it with: sudo systemctl start kfdguard')],
            devices: [],
            findings: [],
            software: [],
            applications: [],
            footer: '',
        };
    }
    const known = STATES[snap.state] ?? {icon: 'dialog-question-symbolic', style: 'kfdguard-unknown'};
    const lines = [];
    if (snap.kernel)
        lines.push(snap.kfdVersion ? format(_('Kernel %s, KFD %s'), snap.kernel, snap.kfdVersion)
            : format(_('Kernel %s, no KFD'), snap.kernel));
    const t = snap.transition;
    if (t && t.newState === snap.state)
        lines.push(format(_('Since %s; before: %s'), t.time.format('%X'), stateLabel(t.oldState, _)));
    const devices = snap.devices.map(d => {
        const gfx = d.GfxTarget || _('unknown target');
        const reason = d.ComputeReady ? _('ready') : d.Reason || _('not ready');
        return {
            title: d.Name || d.Slot || _('AMD GPU'),
            detail: `${gfx} · ${reason}`,
            hardware: hardwareLine(d, _),
            ready: Boolean(d.ComputeReady),
        };
    });
    // The service orders findings most severe first; keep that, errors before warnings before info.
    const findings = snap.findings
        .map((f, i) => ({...f, i}))
        .sort((a, b) => (SEVERITY_ORDER[a.severity] ?? 3) - (SEVERITY_ORDER[b.severity] ?? 3) || a.i - b.i)
        .map(({code, severity, message, remedy}) =>
            ({code, severity, severityLabel: severityLabel(severity, _), message, remedy}));
    const footer = [];
    if (snap.lastCheck)
        footer.push(format(_('Checked at %s'), snap.lastCheck.format('%X')));
    if (snap.version)
        footer.push(`kfdguard ${snap.version}`);
    return {
        present: true,
        label: stateLabel(snap.state, _),
        iconName: known.icon,
        styleClass: known.style,
        title: snap.summary,
        lines,
        devices,
        findings,
        software: softwareLines(snap.software, _),
        applications: applicationLines(snap.applications, _),
        footer: footer.join(' · '),
    };
}
