// How a command's whole process tree ends in a pod, where it cannot have a PID namespace of its own (the
// restricted Pod Security level leaves no capability and RuntimeDefault seccomp refuses unshare(2)), no cgroup
// (the container's cgroupfs is read-only), and no marker a command controls (it leaves its process group and
// session with setsid, its environment with `env -i`, its parent by forking twice).
//
// The marker is the kernel's audit login uid (/proc/<pid>/loginuid). A process whose login uid is unset, as every
// process of a container is when the runtime runs as a system service, may set it once without any privilege;
// after that only CAP_AUDIT_CONTROL can change it, and fork and exec pass it on to every descendant, whatever
// session, group, environment or parent it moves to. Each command sets a marker of its own before anything of
// it runs (buildMarkedCommand), and a sweep (PROCESS_SWEEP_SH) kills every process carrying a marker that is no longer
// live or is past its deadline: the exec's first process sweeps its own slot once the command has ended (so a
// leftover holding the exec's output open does not keep the exec from ending), the sidecar sweeps the slot again
// once the exec has ended (the first process may have been killed, or the command held past its timeout), and
// PID 1 of a sandbox pod sweeps every few seconds as a backstop no command can kill (the kernel delivers no signal to a PID
// namespace's init from inside unless it handles it, and no SIGKILL or SIGSTOP at all; PID 1 handles none). A process
// whose main thread exited while another thread runs on shows its leader as a zombie: the sweep reads its task list.
//
// Only POSIX sh builtins (read, case, kill, globbing), so any sandbox image's sh runs it, and PID 1 runs it in
// its own process with no fork a command could kill.

/** The name the wrapper's and the sweep's `sh -c` give as `$0`, seen in `ps`. */
const WRAPPER_NAME = "leviath-shell";
const SWEEP_NAME = "leviath-sweep";

/** The exit code and stderr line of a command whose marker could not be set (it did not run). */
export const MARK_FAILED = { exitCode: 125, stderr: "leviath: cannot mark the command in /proc/self/loginuid, so it did not run\n" } as const;

/** The exit code of a sweep that found processes still running after its last pass. */
export const SWEEP_UNFINISHED_EXIT = 4;

/** How often PID 1 of a sandbox pod sweeps, in seconds. */
export const PID1_SWEEP_SECONDS = 2;

/**
 * A marker is `deadline * 1024 + slot`: the node's uptime second (modulo 2^21, about 24 days) past which no
 * process of the command may run, and a slot the sidecar gives each running command (unique among them, so a
 * sweep can name a command by it without reading the pod's clock). Always below 2^31: never the unset value.
 */
export const MARKER = { slots: 1024, deadlineModulo: 2 ** 21 } as const;

/** The longest deadline a marker holds: half its clock's cycle (about 12 days); a longer timeout is cut to it. */
export const MAX_MARKED_SECONDS = MARKER.deadlineModulo / 2 - 1;

/**
 * `sweep [slot...]`: kills every process but itself whose login uid differs from PID 1's (a marked command's) when
 * its marker is not live, is past its deadline or has a slot named; repeats until a pass finds nothing to kill (at most 100
 * passes, then returns 4). A marker is live while a process carrying it runs with its parent outside the
 * container (the exec's own first process) or an unmarked process other than PID 1 (the wrapper a channel's
 * multiplexer started, shell-channel.ts), neither stopped nor traced: a command can make neither. A zombie is
 * never counted unless its thread group runs on (a task besides the leader in /proc/<pid>/task): then it is killed.
 */
export const PROCESS_SWEEP_SH = [
  "sweep() {",
  '  _named=" $* " _n=0',
  // loginuid has no trailing newline, so `read` returns 1 having read it: test the value instead.
  '  _base="" && read -r _base </proc/1/loginuid; [ -n "$_base" ] || return 3',
  "  while :; do",
  '    _live=" " _seen=""',
  "    for _d in /proc/[0-9]*; do",
  '      _m="" && read -r _m <"$_d/loginuid"; [ -n "$_m" ] && [ "${_d#/proc/}" != "$$" ] || continue',
  '      [ "$_m" = "$_base" ] && continue',
  '      _s="" _pp=""',
  '      while read -r _k _v _r; do case $_k in State:) _s=$_v ;; PPid:) _pp=$_v; break ;; esac; done <"$_d/status" || continue',
  // A zombie thread-group leader whose other threads run on (its main thread exited, another did not) is a running
  // process: its task list holds more than the leader, and a kill of its pid ends the whole group.
  '      case $_s in "") continue ;; Z|X)',
  '        _t="" && for _t in "$_d"/task/[0-9]*; do [ "${_t##*/}" != "${_d#/proc/}" ] && [ -e "$_t" ] && break; _t=""; done',
  '        [ -n "$_t" ] || continue ;;',
  "      esac",
  '      _seen="$_seen $_m:${_d#/proc/}"',
  // Live: its parent is outside the container (an exec's first process) or a process without a marker other than
  // PID 1 (a channel's, shell-channel.ts); a command's own processes all carry its marker, and an orphan's parent is PID 1.
  '      case $_s in R|S|D) _pm="" && case $_pp in 0) _pm=$_base ;; 1) ;; *) read -r _pm <"/proc/$_pp/loginuid" 2>/dev/null ;; esac',
  '        [ "$_pm" = "$_base" ] && _live="$_live$_m " ;; esac',
  "    done",
  "    read -r _up _r </proc/uptime || return 3",
  `    _now=$((\${_up%.*} % ${MARKER.deadlineModulo})) _kill=""`,
  "    for _e in $_seen; do",
  "      _m=${_e%%:*}",
  `      case $_named in *" $((_m % ${MARKER.slots})) "*) ;; *)`,
  `        [ $(((_now - _m / ${MARKER.slots} + ${MARKER.deadlineModulo}) % ${MARKER.deadlineModulo})) -lt ${MARKER.deadlineModulo / 2} ] ||`,
  '          case $_live in *" $_m "*) continue ;; esac ;;',
  "      esac",
  '      _kill="$_kill ${_e#*:}"',
  "    done",
  '    [ -z "$_kill" ] && return 0',
  `    _n=$((_n + 1)); [ "$_n" -gt 100 ] && return ${SWEEP_UNFINISHED_EXIT}`,
  "    kill -KILL $_kill 2>/dev/null",
  "  done",
  "}",
].join("\n");

/**
 * The signals PID 1 of a sandbox pod ignores. The kernel gives a PID namespace's init a signal from inside only when
 * it handles it, so no signal a command sends stops it: no trap, and those a shell might handle by itself (bash's
 * SIGINT) set to ignore. The runtime's stop signal is ignored too: the kubelet ends the pod with SIGKILL after its
 * grace period, which a command cannot send (SIGKILL and SIGSTOP reach a namespace's init only from outside).
 */
export const PID1_IGNORED_SIGNALS = ["HUP", "INT", "QUIT", "TERM", "USR1", "USR2", "ALRM", "PIPE"] as const;

/** PID 1 of a sandbox pod: sweeps every few seconds, and no command stops it (see {@link PID1_IGNORED_SIGNALS}). */
export const SANDBOX_PID1_SCRIPT = `${PROCESS_SWEEP_SH}\ntrap '' ${PID1_IGNORED_SIGNALS.join(" ")}\nwhile :; do sweep >/dev/null 2>&1; sleep ${PID1_SWEEP_SECONDS} & wait $!; done`;

/** The wrapper's script, `sh -c <it> leviath-shell <slot> <seconds> argv...` (see {@link buildMarkedCommand}). */
export const MARKED_WRAPPER_SH = [
  "read -r _up _r </proc/uptime &&",
  `echo $(((\${_up%.*} + $2) % ${MARKER.deadlineModulo} * ${MARKER.slots} + $1)) >/proc/self/loginuid 2>/dev/null ||`,
  `{ echo '${MARK_FAILED.stderr.trimEnd()}' >&2; exit ${MARK_FAILED.exitCode}; }`,
  "_slot=$1",
  "shift 2",
  PROCESS_SWEEP_SH,
  '"$@"',
  "_rc=$?",
  'sweep "$_slot" >/dev/null 2>&1',
  'exit "$_rc"',
].join("\n");

/**
 * `argv` run marked: the wrapping sh sets its login uid to the marker of `slot` and a deadline `seconds` from now
 * (the pod's clock) before anything else runs, runs `argv`, sweeps the slot (sparing itself) and exits with
 * `argv`'s status; when the marker cannot be set the command does not run and the exec ends with {@link MARK_FAILED}.
 */
export function buildMarkedCommand(slot: number, seconds: number, argv: readonly string[]): string[] {
  const within = Math.min(Math.ceil(seconds), MAX_MARKED_SECONDS);
  return ["sh", "-c", MARKED_WRAPPER_SH, WRAPPER_NAME, String(slot), String(within), ...argv];
}

/** The sweep as an exec's command line, killing the named slots' processes whatever their state. */
export function buildSweepCommand(slots: readonly number[]): string[] {
  return ["sh", "-c", `${PROCESS_SWEEP_SH}\nsweep "$@" 2>/dev/null`, SWEEP_NAME, ...slots.map(String)];
}

/** Whether an exec ended because its command's marker could not be set. */
export function isMarkFailure(exitCode: number | null, stderr: string): boolean {
  return exitCode === MARK_FAILED.exitCode && stderr === MARK_FAILED.stderr;
}
