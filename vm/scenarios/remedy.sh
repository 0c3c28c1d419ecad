#!/bin/bash
# Scenario "remedy" (issue 37 item 4): ApplyRemedy/ClearRemedy under the guest's
# real systemd, polkitd and system bus. The machine: a simulated Radeon 780M
# (Phoenix, gfx1103, an APU; bound over /sys/bus/pci/devices as in "fallback")
# and ollama 0.32.15 as its install script lays it out, with ollama.service
# (never started: its ExecStart is a sleep). Its bundled rocBLAS carries gfx1103,
# so ollama would take the GPU through ROCm, but from 0.30.0 it drops an
# integrated GPU unless OLLAMA_IGPU_ENABLE=1.
#  1. The service's Applications says CPU and the remedy's drop-in line.
#  2. A user without polkit's org.kfdguard.configure-applications is refused;
#     nothing is written.
#  3. root's ApplyRemedy starts kfdguard-remedy@apply-ollama.service (the
#     resident, user kfdguard, through 50-kfdguard-units.rules), which writes
#     /etc/systemd/system/ollama.service.d/50-kfdguard-remedy.conf and reloads
#     systemd from inside its sandbox: systemd's own view of ollama.service has
#     the value, and the verdict is ROCm.
#  4. ClearRemedy removes the file, systemd forgets the value.
#  5. A value the administrator set in override.conf is refused, not overridden.
SCENARIO=remedy
. ./lib.sh

slot=0000:0f:00.0 # simulate_gpu's
dropin=/etc/systemd/system/ollama.service.d/50-kfdguard-remedy.conf
override=/etc/systemd/system/ollama.service.d/override.conf
remedy_call() { busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" "$1" s ollama 2>&1; }
ollama_env() { systemctl show -p Environment --value ollama.service; }
applications() { busctl --system get-property "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Applications 2>/dev/null; }
has_applications() { [ "$(applications)" != "a(ssssss) 0" ]; }

installed_checks
# --- the machine ------------------------------------------------------------------
# ollama's install-script layout, as tests/unit/userspace/test_userspace_applications.py builds it: the
# release build's version in the binary, a backend a directory, rocBLAS's per-target file names.
lib=/usr/local/lib/ollama
mkdir -p /usr/local/bin "$lib/rocm/rocblas/library"
{ printf '\177ELF'; head -c 4096 /dev/zero
  printf '\377 Go buildinf:build\t-ldflags="-w -s -X=github.com/ollama/ollama/version.Version=0.32.15 -X=..."\n'; } \
    >/usr/local/bin/ollama
chmod 0755 /usr/local/bin/ollama
: >"$lib/libggml-base.so"
: >"$lib/rocm/libggml-hip.so"
: >"$lib/rocm/libamdhip64.so.6.3.60303"
: >"$lib/rocm/rocblas/library/TensileLibrary_lazy_gfx1103.dat"
printf '[Unit]\nDescription=Ollama Service (vmlane)\n\n[Service]\nExecStart=/bin/sleep infinity\n' \
    >/etc/systemd/system/ollama.service
rm -rf /etc/systemd/system/ollama.service.d
systemctl daemon-reload
check "a simulated Radeon 780M (1002:15bf) appears in /sys/bus/pci/devices (bind mount)" \
    simulate_gpu 0x030000 0x15bf 0xc1
restart_service
check "kfdguard restarted and serves $BUS_NAME" wait_serving 60
check "the software inventory is published" wait_until 120 has_applications
apps=$(applications)
note "Applications: $apps"
check "ollama 0.32.15 takes the CPU on $slot" contains "$apps" "\"ollama 0.32.15\" \"ollama\" \"$slot\" \"CPU\""
check "... and the remedy is the drop-in line" contains "$apps" "Environment=OLLAMA_IGPU_ENABLE=1"

# --- 2. no authorization, nothing written ---------------------------------------------
id bob >/dev/null 2>&1 || useradd -m bob
reply=$(runuser -u bob -- busctl --system --allow-interactive-authorization=no call "$BUS_NAME" "$BUS_PATH" \
    "$BUS_NAME" ApplyRemedy s ollama 2>&1)
check "ApplyRemedy from bob is refused (got: $reply)" contains "$reply" "org.kfdguard.configure-applications"
check "... and nothing is written" test ! -e "$dropin"

# --- 3. root's ApplyRemedy through kfdguard-remedy@apply-ollama.service ----------------
reply=$(remedy_call ApplyRemedy)
note "ApplyRemedy: $reply"
check "ApplyRemedy ran kfdguard-remedy@apply-ollama.service (Result=$(mono kfdguard-remedy@apply-ollama.service Result))" \
    test "$(mono kfdguard-remedy@apply-ollama.service Result)" = success
check "... which wrote $dropin (root, 0644)" test "$(stat -c '%a %U' "$dropin" 2>&1)" = "644 root"
check "... with the value" grep -qx 'Environment=OLLAMA_IGPU_ENABLE=1' "$dropin"
check "... and the reply says so" contains "$reply" "wrote $dropin (OLLAMA_IGPU_ENABLE=1); systemd reloaded"
check "systemd's ollama.service has the value: the daemon-reload ran in the sandbox (got: $(ollama_env))" \
    contains "$(ollama_env)" OLLAMA_IGPU_ENABLE=1
check "... and needs no further reload" test "$(mono ollama.service NeedDaemonReload)" = no
check "the verdict is ROCm now (Applications: $(applications))" \
    contains "$(applications)" "\"ollama 0.32.15\" \"ollama\" \"$slot\" \"ROCm\""
check "/run/kfdguard/remedy.json is root's record of it" \
    contains "$(cat /run/kfdguard/remedy.json 2>&1)" '"kind": "remedy-apply"'

# --- 4. ClearRemedy --------------------------------------------------------------------
reply=$(remedy_call ClearRemedy)
note "ClearRemedy: $reply"
check "ClearRemedy ran kfdguard-remedy@clear-ollama.service (Result=$(mono kfdguard-remedy@clear-ollama.service Result))" \
    test "$(mono kfdguard-remedy@clear-ollama.service Result)" = success
check "... which removed the drop-in" test ! -e "$dropin"
check "systemd's ollama.service no longer has the value (got: $(ollama_env))" not contains "$(ollama_env)" OLLAMA_IGPU_ENABLE

# --- 5. the administrator's own value is refused, not overridden -------------------------
mkdir -p "${override%/*}"
printf '[Service]\nEnvironment="OLLAMA_IGPU_ENABLE=0"\n' >"$override"
systemctl daemon-reload
reply=$(remedy_call ApplyRemedy)
note "ApplyRemedy over override.conf: $reply"
check "ApplyRemedy is refused and names the administrator's file" contains "$reply" "is set by ollama.service ($override)"
check "... the unit's refusal is no failed unit (Result=$(mono kfdguard-remedy@apply-ollama.service Result))" \
    test "$(mono kfdguard-remedy@apply-ollama.service Result)" = success
check "... nothing is written and override.conf is as it was" \
    bash -c "test ! -e '$dropin' && grep -qx 'Environment=\"OLLAMA_IGPU_ENABLE=0\"' '$override'"

umount /sys/bus/pci/devices
rm -rf /etc/systemd/system/ollama.service /etc/systemd/system/ollama.service.d /usr/local/bin/ollama "$lib"
systemctl daemon-reload
finish
