// kfdguard GNOME Shell extension: the entry point for GNOME 45 and later (ES modules).

import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';
import * as Main from 'resource:///org/gnome/shell/ui/main.js';

import {Indicator} from './indicator.js';

export default class KfdguardExtension extends Extension {
    enable() {
        this._indicator = new Indicator({gettext: this.gettext.bind(this)});
        Main.panel.addToStatusArea('kfdguard', this._indicator);
    }

    disable() {
        this._indicator?.destroy();
        this._indicator = null;
    }
}
