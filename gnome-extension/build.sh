#!/bin/sh
# Build the kfdguard GNOME Shell extension from src/ into OUT (default: dist):
#   OUT/shell43/kfdguard@kfdguard.org/   GNOME 43 and 44 (legacy `imports`)
#   OUT/shell45/kfdguard@kfdguard.org/   GNOME 45 and later (ES modules)
#   OUT/kfdguard@kfdguard.org.shell43.zip, OUT/kfdguard@kfdguard.org.shell45.zip
# The shared modules (client.js, indicator.js) are written as ES modules; for
# GNOME 43/44 their import and export lines are rewritten for the legacy loader.
# Needs sed, msgfmt (gettext) and zip.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-dist}
UUID=kfdguard@kfdguard.org
DOMAIN=kfdguard-gnome
SHARED="client.js indicator.js"

legacy() {
    # ES module -> legacy gjs module: imports become constants, exports become
    # `var`/`function` declarations (what the legacy importer exports).
    sed \
        -e "s#^import \([A-Za-z_]*\) from 'gi://\([A-Za-z]*\)';#const \1 = imports.gi.\2;#" \
        -e "s#^import \* as \([A-Za-z_]*\) from 'resource:///org/gnome/shell/\([a-z]*\)/\([A-Za-z]*\)\.js';#const \1 = imports.\2.\3;#" \
        -e "s#^import {\(.*\)} from '\./\([A-Za-z]*\)\.js';#const {\1} = imports.misc.extensionUtils.getCurrentExtension().imports.\2;#" \
        -e "s#^export const #var #" \
        -e "s#^export function #function #" \
        "$1"
}

build() {  # build TARGET SHELL-VERSIONS
    target=$1 versions=$2
    dir=$OUT/$target/$UUID
    rm -rf "$dir"
    mkdir -p "$dir"
    sed "s#^\( *\"shell-version\": \).*#\1$versions,#" "$HERE/metadata.json" > "$dir/metadata.json"
    cp "$HERE/stylesheet.css" "$dir/"
    for f in $SHARED; do
        if [ "$target" = shell43 ]; then
            legacy "$HERE/src/$f" > "$dir/$f"
            if grep -nE '^(import|export) ' "$dir/$f"; then
                echo "build.sh: $f: an import or export the legacy rewrite does not handle" >&2
                exit 1
            fi
        else
            cp "$HERE/src/$f" "$dir/$f"
        fi
    done
    if [ "$target" = shell43 ]; then
        cp "$HERE/src/extension-43.js" "$dir/extension.js"
    else
        cp "$HERE/src/extension-45.js" "$dir/extension.js"
    fi
    for po in "$HERE"/po/*.po; do
        [ -e "$po" ] || continue
        lang=$(basename "$po" .po)
        mkdir -p "$dir/locale/$lang/LC_MESSAGES"
        msgfmt --check -o "$dir/locale/$lang/LC_MESSAGES/$DOMAIN.mo" "$po"
    done
    zip=$(cd "$OUT" && pwd)/$UUID.$target.zip
    rm -f "$zip"
    (cd "$dir" && zip -qr "$zip" .)
    echo "built $zip"
}

build shell43 '["43", "44"]'
build shell45 '["45", "46", "47", "48"]'
