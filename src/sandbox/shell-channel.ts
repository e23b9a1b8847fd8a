// A sandbox pod's shell channel: one pods/exec the sidecar holds open, running a multiplexer in POSIX sh that runs
// one command per request frame, so a call costs a frame on an open stream instead of a new exec through the API
// server and the kubelet. Each command runs exactly as a per-call exec runs it (process-sweep.ts): marked with the
// channel's slot and a deadline, `timeout -s KILL`, swept by its wrapper when it ends, and swept again by the
// multiplexer once the wrapper has ended, before the result frame is written. The wrapper's parent is a process
// without a marker other than PID 1, which keeps its marker live for the other sweeps, as an exec's first process is.
//
// Who can write to the channel: the sidecar, over its exec stream; and any process of the pod, which may open the
// multiplexer's stdin and stdout through /proc/<pid>/fd (same uid). So every request carries a token the
// multiplexer expects and the next one to expect, each 128 random bits the sidecar draws, sent only while no
// command of the channel runs and read before its command starts: a frame a command wrote in is refused and the
// multiplexer exits (`refused`). Every result echoes its request's token, written once nothing of the command
// runs, so a result a command wrote ahead is never taken for a later call's. The tokens live in the
// multiplexer's memory only: reading it needs ptrace access (docs/security.md, "Not covered").
//
// The output goes to two files in /tmp through `head -c` (a command writing past the cap is stopped by SIGPIPE, else
// at its timeout), opened by the multiplexer before the command starts and read back through descriptors it
// holds, never by name; the result frame gives each stream's length, then its bytes. Needs sh, timeout, head and
// wc (busybox or coreutils); a pod without them answers `unavailable` and the sidecar execs per call as before.

/** The first word of every line the multiplexer writes. */
export const CHANNEL_WORD = "leviath-channel";

/** The name the multiplexer's `sh -c` gives as `$0`, seen in `ps`. */
const CHANNEL_NAME = "leviath-channel";

/** The waits (seconds) between the multiplexer's sweeps of a command's slot: the per-call exec's sidecar retries. */
const SWEEP_WAITS = ["0.25", "0.5", "1", "2", "4"];

/** The multiplexer's exit codes: a hello it cannot read, a tool missing, a refused request, a request cut short. */
export const CHANNEL_EXIT = { badHello: 2, unavailable: 3, refused: 4, truncated: 5 } as const;

/**
 * The multiplexer's script. `sweep` and `wrapper` are PROCESS_SWEEP_SH and MARKED_WRAPPER_SH; `capBytes`, what the
 * sidecar takes of one stream (it reads one byte more, to tell a full stream from a longer one).
 */
export function buildChannelScript(sweep: string, wrapper: string, capBytes: number): string {
  const cap = capBytes + 1;
  const quoted = `'${wrapper.replaceAll("'", `'\\''`)}'`;
  return [
    "_f=/tmp/.leviath-channel-$$",
    "IFS= read -r _l || exit 0",
    "set -f; set -- $_l; set +f",
    `[ "$#" -eq 3 ] && [ "$1" = ${CHANNEL_WORD} ] || exit ${CHANNEL_EXIT.badHello}`,
    '_tok=$2 _slot=$3',
    `case $_slot in ""|*[!0-9]*) exit ${CHANNEL_EXIT.badHello} ;; esac`,
    `for _t in timeout head wc; do command -v "$_t" >/dev/null 2>&1 || { echo "${CHANNEL_WORD} unavailable $_t is not on the PATH"; exit ${CHANNEL_EXIT.unavailable}; }; done`,
    `{ : >"$_f.out" && : >"$_f.err"; } 2>/dev/null || { echo "${CHANNEL_WORD} unavailable /tmp is not writable"; exit ${CHANNEL_EXIT.unavailable}; }`,
    sweep,
    `_w=${quoted}`,
    `echo "${CHANNEL_WORD} ready $$"`,
    "while IFS= read -r _l; do",
    "  set -f; set -- $_l; set +f",
    `  [ "$#" -eq 5 ] && [ "$1" = "$_tok" ] || { echo "${CHANNEL_WORD} refused"; exit ${CHANNEL_EXIT.refused}; }`,
    `  case $3:$5:$4 in *[!0-9.:]*|*[.]*:*|:*|*::*|*:) echo "${CHANNEL_WORD} refused"; exit ${CHANNEL_EXIT.refused} ;; esac`,
    "  _id=$1 _tok=$2 _secs=$3 _to=$4 _n=$5 _c=''",
    "  while [ \"$_n\" -gt 0 ]; do IFS= read -r _x || exit " + String(CHANNEL_EXIT.truncated) + "; _c=\"$_c$_x",
    '"; _n=$((_n - 1)); done',
    // Opened (and emptied) before the command runs: what it renames or replaces later is not what is read back.
    '  exec 5>"$_f.out" 6>"$_f.err" 7<"$_f.out" 8<"$_f.out" 4<"$_f.err" 9<"$_f.err"',
    `  { { sh -c "$_w" leviath-shell "$_slot" "$_secs" timeout -s KILL "$_to" sh -c "$_c" 2>&1 1>&3 3>&- 4<&- 5>&- 6>&- 7<&- 8<&- 9<&-; echo "$?" >"$_f.rc"; } | head -c ${cap} >&6; } 3>&1 </dev/null | head -c ${cap} >&5`,
    `  _sw=1; for _p in 0 ${SWEEP_WAITS.join(" ")}; do [ "$_p" = 0 ] || sleep "$_p"; sweep "$_slot" >/dev/null 2>&1; _sw=$?; [ "$_sw" -eq 0 ] && break; done`,
    '  _rc="" && read -r _rc <"$_f.rc"',
    '  case $_rc in ""|*[!0-9]*) _rc=- ;; esac',
    "  set -- $(wc -c <&7; wc -c <&4)",
    `  _ol=$(($1 < ${cap} ? $1 : ${cap})) _el=$(($2 < ${cap} ? $2 : ${cap}))`,
    `  echo "${CHANNEL_WORD} result $_id $_rc $_sw $_ol $_el"`,
    `  head -c "$_ol" <&8; head -c "$_el" <&9`,
    // Nothing of a call's output stays in the pod's /tmp once it is sent.
    '  exec 4<&- 5>&- 6>&- 7<&- 8<&- 9<&-; : >"$_f.out"; : >"$_f.err"',
    "done",
  ].join("\n");
}

/** The multiplexer's command line (its script is an argument; nothing of any command is). */
export function buildChannelCommand(script: string): string[] {
  return ["sh", "-c", script, CHANNEL_NAME];
}

/** The first frame: the token the first request carries, and the slot every command of the channel is marked with. */
export function buildChannelHello(token: string, slot: number): string {
  return `${CHANNEL_WORD} ${token} ${slot}\n`;
}

/** One request to run. */
export interface ChannelRequest {
  /** The token the multiplexer expects now (echoed in the result) and the one it is to expect next. */
  readonly token: string;
  readonly next: string;
  /** The marker's deadline from now, in whole seconds (the sidecar's own give-up and a second). */
  readonly deadlineSeconds: number;
  /** The in-sandbox `timeout`, in seconds. */
  readonly timeoutSeconds: number;
  readonly command: string;
}

/**
 * The request frame: `<token> <next> <deadline> <timeout> <lines>`, then the command's lines (each read whole by
 * `read -r`). A command with a NUL byte cannot be an argument at all: undefined.
 */
export function buildChannelRequest(r: ChannelRequest): string | undefined {
  if (r.command.includes("\0")) return undefined;
  const lines = r.command.split("\n");
  return `${r.token} ${r.next} ${Math.ceil(r.deadlineSeconds)} ${formatSeconds(r.timeoutSeconds)} ${lines.length}\n${lines.join("\n")}\n`;
}

/** A timeout as `timeout` reads it: a decimal with no exponent. */
function formatSeconds(s: number): string {
  const fixed = s.toFixed(3).replace(/\.?0+$/, "");
  return fixed === "" ? "0" : fixed;
}

/**
 * What the sidecar execs when a channel broke or was given up: kill its multiplexer (only when that pid is still
 * an exec's first process without a marker, never PID 1), then sweep its slot.
 */
export function buildChannelEndScript(sweep: string): string {
  return [
    sweep,
    '_b="" && read -r _b </proc/1/loginuid',
    '_m="" && read -r _m <"/proc/$1/loginuid" 2>/dev/null',
    '_pp="" && while read -r _k _v _r; do case $_k in PPid:) _pp=$_v; break ;; esac; done <"/proc/$1/status" 2>/dev/null',
    '[ "$1" != 1 ] && [ -n "$_m" ] && [ "$_m" = "$_b" ] && [ "$_pp" = 0 ] && kill -KILL "$1" 2>/dev/null',
    'sweep "$2" 2>/dev/null',
  ].join("\n");
}
