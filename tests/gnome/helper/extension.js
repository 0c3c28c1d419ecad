// Test only: a window into the running GNOME Shell for tests/gnome/test_shell.py.
// Exports org.kfdguard.ShellTest on the session bus: the kfdguard indicator's
// label and menu text, opening its menu, pressing its buttons, and
// screenshots (Shell.Screenshot, the API behind the Shell's own screenshot UI).
/* exported init */

const {Gio, GLib, Shell, St} = imports.gi;
const Main = imports.ui.main;
const Config = imports.misc.config;

const IFACE = `<node>
  <interface name="org.kfdguard.ShellTest">
    <method name="State"><arg type="s" direction="out"/></method>
    <method name="OpenMenu"/>
    <method name="CloseMenu"/>
    <method name="Press"><arg type="s" direction="in"/></method>
    <method name="SetEnabled"><arg type="b" direction="in"/></method>
    <method name="CopyRemedy"><arg type="i" direction="in"/></method>
    <method name="Clipboard"><arg type="s" direction="out"/></method>
    <method name="Screenshot">
      <arg type="s" direction="in" name="path"/>
      <arg type="i" direction="in" name="x"/>
      <arg type="i" direction="in" name="y"/>
      <arg type="i" direction="in" name="width"/>
      <arg type="i" direction="in" name="height"/>
    </method>
  </interface>
</node>`;

function indicator() {
    const found = Main.panel.statusArea['kfdguard'];
    if (!found)
        throw new Error('the kfdguard indicator is not in the panel');
    return found;
}

function rect(actor) {
    const [x, y] = actor.get_transformed_position();
    const [width, height] = actor.get_transformed_size();
    return {x: Math.round(x), y: Math.round(y), width: Math.round(width), height: Math.round(height)};
}

class ShellTest {
    State() {
        const found = Main.panel.statusArea['kfdguard'] ?? null;
        const state = {
            shellVersion: Config.PACKAGE_VERSION,
            startupComplete: !Main.layoutManager._startingUp,
            overview: Main.overview.visible,
            screen: {width: global.stage.width, height: global.stage.height},
            indicator: null,
        };
        if (found) {
            state.indicator = {
                label: found.labelText,
                iconName: found._icon.icon_name,
                styleClasses: (found._label.get_style_class_name() ?? '').split(' '),
                visible: found.container.visible,
                rect: rect(found),
                menuOpen: found.menu.isOpen,
                menuRect: found.menu.isOpen ? rect(found.menu.actor) : null,
                menuTexts: found.menuTexts(),
                accessSensitive: found.accessItem.getSensitive(),
                reloadSensitive: found.reloadItem.getSensitive(),
            };
        }
        return JSON.stringify(state);
    }

    OpenMenu() {
        Main.overview.hide();
        indicator().menu.open(false);  // no animation: the screenshot sees the final state
    }

    CloseMenu() {
        indicator().menu.close(false);
    }

    Press(which) {
        const found = indicator();
        const item = {access: found.accessItem, reload: found.reloadItem}[which];
        if (!item)
            throw new Error(`no button ${which}`);
        item.activate(null);
    }

    SetEnabled(enabled) {
        // Through the extension manager, as the Extensions app does: disable() must leave nothing behind.
        const uuid = 'kfdguard@kfdguard.org';
        if (enabled)
            Main.extensionManager.enableExtension(uuid);
        else
            Main.extensionManager.disableExtension(uuid);
    }

    CopyRemedy(index) {
        indicator().remedyItems[index].activate(null);
    }

    ClipboardAsync(params, invocation) {
        St.Clipboard.get_default().get_text(St.ClipboardType.CLIPBOARD, (clipboard, text) => {
            invocation.return_value(new GLib.Variant('(s)', [text ?? '']));
        });
    }

    async ScreenshotAsync(params, invocation) {
        try {
            const [path, x, y, width, height] = params;  // already unpacked by the exporter
            const file = Gio.File.new_for_path(path);
            const stream = file.replace(null, false, Gio.FileCreateFlags.NONE, null);
            const shooter = new Shell.Screenshot();
            await new Promise((resolve, reject) => {
                shooter.screenshot_area(x, y, width, height, stream, (s, result) => {
                    try {
                        s.screenshot_area_finish(result);
                        resolve();
                    } catch (e) {
                        reject(e);
                    }
                });
            });
            stream.close(null);
            invocation.return_value(null);
        } catch (e) {
            invocation.return_error_literal(Gio.IOErrorEnum, Gio.IOErrorEnum.FAILED, String(e));
        }
    }
}

class Extension {
    enable() {
        this._impl = Gio.DBusExportedObject.wrapJSObject(IFACE, new ShellTest());
        this._impl.export(Gio.DBus.session, '/org/kfdguard/ShellTest');
        this._nameId = Gio.bus_own_name_on_connection(Gio.DBus.session, 'org.kfdguard.ShellTest',
            Gio.BusNameOwnerFlags.NONE, null, null);
        // The Shell starts in the overview; the tests look at the desktop.
        if (Main.layoutManager._startingUp) {
            this._startupId = Main.layoutManager.connect('startup-complete', () => {
                GLib.idle_add(GLib.PRIORITY_DEFAULT, () => {
                    Main.overview.hide();
                    return GLib.SOURCE_REMOVE;
                });
            });
        } else {
            Main.overview.hide();
        }
    }

    disable() {
        if (this._startupId)
            Main.layoutManager.disconnect(this._startupId);
        Gio.bus_unown_name(this._nameId);
        this._impl.unexport();
    }
}

function init() {
    return new Extension();
}
