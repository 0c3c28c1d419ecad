#!/bin/bash
# Builds vmlane-dummy_1.0_all.deb into DIR (default .): a package shaped like
# kfdguard's (a systemd unit ordered Before=display-manager.service, enabled by
# its postinst, Depends on the Python libraries kfdguard uses) to self-test the
# lane's .deb install path without the real package.
set -eu
out=$(realpath "${1:-.}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pkg=$tmp/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/lib/systemd/system"
cat >"$pkg/DEBIAN/control" <<'CTL'
Package: vmlane-dummy
Version: 1.0
Architecture: all
Maintainer: vmlane <vmlane@localhost>
Depends: python3 (>= 3.11), python3-yaml, python3-pyudev, python3-systemd, python3-dbus-fast, python3-dbus-next, polkitd
Description: vmlane self-test package
 A oneshot unit ordered before display-manager.service.
CTL
cat >"$pkg/lib/systemd/system/vmlane-dummy.service" <<'UNIT'
[Unit]
Description=vmlane dummy early unit
DefaultDependencies=no
After=local-fs.target systemd-udevd.service
Before=display-manager.service multi-user.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'cut -d" " -f1 /proc/uptime >/run/vmlane-dummy.started'

[Install]
WantedBy=multi-user.target
UNIT
cat >"$pkg/DEBIAN/postinst" <<'POST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    deb-systemd-helper enable vmlane-dummy.service >/dev/null || true
    if [ -d /run/systemd/system ]; then
        systemctl --system daemon-reload >/dev/null || true
        deb-systemd-invoke start vmlane-dummy.service >/dev/null || true
    fi
fi
POST
chmod 0755 "$pkg/DEBIAN/postinst"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out/vmlane-dummy_1.0_all.deb" >/dev/null
echo "$out/vmlane-dummy_1.0_all.deb"
