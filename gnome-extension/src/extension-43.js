// kfdguard GNOME Shell extension: the entry point for GNOME 43 and 44 (legacy imports).
/* exported init */

const ExtensionUtils = imports.misc.extensionUtils;
const Main = imports.ui.main;

const Me = ExtensionUtils.getCurrentExtension();
const {Indicator} = Me.imports.indicator;

class KfdguardExtension {
    constructor() {
        ExtensionUtils.initTranslations();
        this._indicator = null;
    }

    enable() {
        this._indicator = new Indicator({gettext: ExtensionUtils.gettext});
        Main.panel.addToStatusArea('kfdguard', this._indicator);
    }

    disable() {
        this._indicator?.destroy();
        this._indicator = null;
    }
}

function init() {
    return new KfdguardExtension();
}
