// kfdguard GNOME Shell extension: the panel indicator and its menu.
//
// It renders describe(client.snapshot()) again whenever the client says
// something changed; it keeps no state of its own besides the answers of the
// two buttons. Shared by the GNOME 43/44 and 45+ entry points.

import Clutter from 'gi://Clutter';
import GObject from 'gi://GObject';
import Pango from 'gi://Pango';
import St from 'gi://St';

import * as PanelMenu from 'resource:///org/gnome/shell/ui/panelMenu.js';
import * as PopupMenu from 'resource:///org/gnome/shell/ui/popupMenu.js';

import {GuardianClient, describe, errorMessage, stateLabel} from './client.js';

const SEVERITY_ICONS = {
    error: 'dialog-error-symbolic',
    warning: 'dialog-warning-symbolic',
    info: 'dialog-information-symbolic',
};

function wrap(label) {
    label.clutter_text.line_wrap = true;
    label.clutter_text.line_wrap_mode = Pango.WrapMode.WORD_CHAR;
    label.clutter_text.ellipsize = Pango.EllipsizeMode.NONE;
    return label;
}

// A menu item that shows text and does nothing when clicked.
const TextItem = GObject.registerClass(
class KfdguardTextItem extends PopupMenu.PopupBaseMenuItem {
    _init(text, params = {}) {
        super._init({reactive: false, can_focus: false});
        this.add_style_class_name('kfdguard-text-item');
        if (params.iconName) {
            this.add_child(new St.Icon({
                icon_name: params.iconName,
                style_class: `popup-menu-icon ${params.iconStyle ?? ''}`,
                y_align: Clutter.ActorAlign.START,
            }));
        }
        this.label = wrap(new St.Label({text, x_expand: true, style_class: params.style ?? 'kfdguard-text'}));
        this.add_child(this.label);
    }
});

// A button in the menu that keeps the menu open: its answer appears below it.
const ActionItem = GObject.registerClass(
class KfdguardActionItem extends PopupMenu.PopupMenuItem {
    _init(text, callback) {
        super._init(text);
        this._callback = callback;
    }

    activate(_event) {
        this._callback();
    }
});

// A remedy: shown in full, copied to the clipboard when clicked.
const RemedyItem = GObject.registerClass(
class KfdguardRemedyItem extends PopupMenu.PopupBaseMenuItem {
    _init(remedy, copyLabel) {
        super._init();
        this.add_style_class_name('kfdguard-remedy-item');
        this.add_child(new St.Icon({
            icon_name: 'edit-copy-symbolic',
            style_class: 'popup-menu-icon',
            y_align: Clutter.ActorAlign.START,
        }));
        this.label = wrap(new St.Label({text: remedy, x_expand: true, style_class: 'kfdguard-remedy'}));
        this.add_child(this.label);
        this.accessible_name = `${copyLabel}: ${remedy}`;
        this.connect('activate', () => {
            St.Clipboard.get_default().set_text(St.ClipboardType.CLIPBOARD, remedy);
        });
    }
});

export const Indicator = GObject.registerClass(
class KfdguardIndicator extends PanelMenu.Button {
    /**
     * @param {object} params
     * @param {Function} params.gettext - the extension's gettext
     * @param {GuardianClient} [params.client] - a client to render (a new one on the system bus by default)
     */
    _init(params) {
        const _ = params.gettext;
        super._init(0.0, _('GPU compute (kfdguard)'), false);
        this._ = _;
        this.add_style_class_name('kfdguard-indicator');

        const box = new St.BoxLayout({style_class: 'panel-status-indicators-box'});
        this._icon = new St.Icon({icon_name: 'dialog-question-symbolic', style_class: 'system-status-icon'});
        this._label = new St.Label({text: '', y_align: Clutter.ActorAlign.CENTER, style_class: 'kfdguard-label'});
        box.add_child(this._icon);
        box.add_child(this._label);
        this.add_child(box);
        this.menu.actor.add_style_class_name('kfdguard-menu');

        // Rebuilt on every change.
        this._statusSection = new PopupMenu.PopupMenuSection();
        this.menu.addMenuItem(this._statusSection);

        // The two buttons and their answers stay.
        this.menu.addMenuItem(new PopupMenu.PopupSeparatorMenuItem());
        this.accessItem = new ActionItem(_('Can I compute?'), () => this._checkAccess());
        this.menu.addMenuItem(this.accessItem);
        this._accessAnswer = new TextItem('', {style: 'kfdguard-answer'});
        this._accessAnswer.hide();
        this.menu.addMenuItem(this._accessAnswer);
        this.reloadItem = new ActionItem(_('Re-check'), () => this._reload());
        this.menu.addMenuItem(this.reloadItem);
        this._reloadAnswer = new TextItem('', {style: 'kfdguard-answer'});
        this._reloadAnswer.hide();
        this.menu.addMenuItem(this._reloadAnswer);
        this._footer = new TextItem('', {style: 'kfdguard-footer'});
        this.menu.addMenuItem(this._footer);

        this._client = params.client ?? new GuardianClient();
        this._ownsClient = !params.client;
        this._changedId = this._client.connect('changed', () => this._sync());
        this._sync();
    }

    /** The label in the panel. */
    get labelText() {
        return this._label.text;
    }

    /**
     * The text of every visible item of the menu, in order (for tests and
     * accessibility checks).
     *
     * @returns {string[]} one entry per visible label
     */
    menuTexts() {
        const texts = [];
        const walk = actor => {
            if (!actor.visible)
                return;
            if (actor instanceof St.Label && actor.text)
                texts.push(actor.text);
            for (const child of actor.get_children())
                walk(child);
        };
        walk(this.menu.box);
        return texts;
    }

    _sync() {
        const _ = this._;
        const view = describe(this._client.snapshot(), _);
        this._label.text = view.label;
        this._icon.icon_name = view.iconName;
        for (const actor of [this._icon, this._label]) {
            if (this._styleClass)
                actor.remove_style_class_name(this._styleClass);
            actor.add_style_class_name(view.styleClass);
        }
        this._styleClass = view.styleClass;

        const section = this._statusSection;
        section.removeAll();
        this.remedyItems = [];
        section.addMenuItem(new TextItem(view.title, {style: 'kfdguard-title'}));
        if (view.lines.length > 0)
            section.addMenuItem(new TextItem(view.lines.join('\n'), {style: 'kfdguard-detail'}));
        if (view.devices.length > 0) {
            section.addMenuItem(new PopupMenu.PopupSeparatorMenuItem(_('GPUs')));
            for (const d of view.devices) {
                // The hardware line (memory, CUs, PCIe link) only when the service sent it.
                const text = [d.title, d.detail, d.hardware].filter(Boolean).join('\n');
                section.addMenuItem(new TextItem(text, {
                    iconName: d.ready ? 'object-select-symbolic' : 'dialog-error-symbolic',
                    iconStyle: d.ready ? 'kfdguard-ready' : 'kfdguard-unavailable',
                }));
            }
        }
        // What the installed stacks can run: "PyTorch 2.4.1+rocm6.1: no code for gfx1103"; which backend each
        // application takes: "ollama 0.32.15: on the CPU (…)", with its fix to copy.
        this._addLines(section, _('Software'), view.software);
        this._addLines(section, _('Applications'), view.applications);
        // An info finding that only repeats the summary says nothing new.
        const findings = view.findings.filter(f => f.remedy || f.severity !== 'info' || f.message !== view.title);
        if (findings.length > 0) {
            section.addMenuItem(new PopupMenu.PopupSeparatorMenuItem(_('Findings')));
            for (const f of findings) {
                // The summary is often the first finding's message: not twice.
                const tag = `${f.severityLabel} · ${f.code}`;
                section.addMenuItem(new TextItem(f.message === view.title ? tag : `${f.message}\n${tag}`, {
                    iconName: SEVERITY_ICONS[f.severity] ?? 'dialog-question-symbolic',
                    iconStyle: `kfdguard-${f.severity}`,
                }));
                if (f.remedy) {
                    const item = new RemedyItem(f.remedy, _('Copy the fix'));
                    this.remedyItems.push(item);
                    section.addMenuItem(item);
                }
            }
        }
        this._footer.label.text = view.footer;
        this._footer.visible = view.footer !== '';
        this.accessItem.setSensitive(view.present);
        this.reloadItem.setSensitive(view.present);
        // The answers were about the state they were given in.
        if (view.label !== this._shownLabel) {
            this._accessAnswer.hide();
            this._reloadAnswer.hide();
        }
        this._shownLabel = view.label;
    }

    _answer(item, text) {
        item.label.text = text;
        item.show();
    }

    // A titled section of lines [{text, ok, remedy}]: a tick or a warning each, and a remedy to copy where
    // a line has one. Nothing, title included, when there are no lines.
    _addLines(section, title, lines) {
        if (lines.length === 0)
            return;
        section.addMenuItem(new PopupMenu.PopupSeparatorMenuItem(title));
        for (const line of lines) {
            section.addMenuItem(new TextItem(line.text, {
                iconName: line.ok ? 'object-select-symbolic' : 'dialog-warning-symbolic',
                iconStyle: line.ok ? 'kfdguard-ready' : 'kfdguard-warning',
            }));
            if (line.remedy) {
                const item = new RemedyItem(line.remedy, this._('Copy the fix'));
                this.remedyItems.push(item);
                section.addMenuItem(item);
            }
        }
    }

    async _checkAccess() {
        const _ = this._;
        this._answer(this._accessAnswer, _('Asking kfdguard…'));
        try {
            const [allowed, explanation] = await this._client.checkAccess();
            if (this._destroyed)
                return;
            this._answer(this._accessAnswer, `${allowed ? _('Yes') : _('No')}: ${explanation}`);
        } catch (e) {
            if (!this._destroyed)
                this._answer(this._accessAnswer, errorMessage(e));
        }
    }

    async _reload() {
        const _ = this._;
        this._answer(this._reloadAnswer, _('Checking again…'));
        this.reloadItem.setSensitive(false);
        try {
            const state = await this._client.reload();
            if (this._destroyed)
                return;
            this._answer(this._reloadAnswer, `${_('Checked again')}: ${stateLabel(state, _)}`);
        } catch (e) {
            if (!this._destroyed)
                this._answer(this._reloadAnswer, errorMessage(e));
        } finally {
            if (!this._destroyed)
                this.reloadItem.setSensitive(this._client.present);
        }
    }

    _onDestroy() {
        this._destroyed = true;
        this._client.disconnect(this._changedId);
        if (this._ownsClient)
            this._client.destroy();
        super._onDestroy();
    }
});
