#!/bin/sh
# Regenerate the translation template from the sources and merge it into every
# translation (then translate the new msgids in the .po files). Needs gettext.
set -eu
cd "$(dirname "$0")/.."
xgettext --add-location=file --from-code=UTF-8 --language=JavaScript --keyword=_ \
    --package-name=kfdguard-gnome \
    -o po/kfdguard-gnome.pot src/client.js src/indicator.js
for po in po/*.po; do
    [ -e "$po" ] || continue
    msgmerge --quiet --add-location=file --update --backup=none "$po" po/kfdguard-gnome.pot
done
