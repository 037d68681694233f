import ArgumentParser
import Foundation
import Synchronization
import Tidemark

/// Output flags shared by the commands: colour, quiet, progress.
struct OutputOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "No summaries, messages or progress: only errors (and the report status, log, ls and config print; diff -q prints nothing and exits 1 on differences, as git diff --quiet).")
    var quiet = false

    @Flag(inversion: .prefixedNo, help: "Colour human output (default: on a terminal, unless NO_COLOR is set).")
    var color: Bool?

    /// True when human output should be coloured.
    var useColor: Bool { color ?? Self.colourTerminal }

    /// Standard output is a terminal that takes colours, and `NO_COLOR` is unset: asked once per
    /// run (it was asked for every line painted: 20,000 `isatty` calls and environment copies
    /// for a `status` naming 20,000 files).
    private static let colourTerminal: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return environment["NO_COLOR"] == nil && isatty(STDOUT_FILENO) == 1 && environment["TERM"] != "dumb"
    }()

    func paint(_ text: String, _ code: String) -> String {
        useColor ? "\u{1B}[\(code)m\(text)\u{1B}[m" : text
    }
    func red(_ text: String) -> String { paint(text, "31") }
    func green(_ text: String) -> String { paint(text, "32") }
    func yellow(_ text: String) -> String { paint(text, "33") }
}

/// Tells on stderr (unless `-q`) that the command first finished a sync a killed run had left.
func tellFinishedInterruptedSync(of mirror: Mirror, _ output: OutputOptions) async {
    guard !output.quiet, let finished = await mirror.finishedInterruptedSync else { return }
    writeStandardError("Finished the \(finished.command) an interrupted run had left: \(finished.branch) \(finished.range)\n")
}

extension InterruptedSync {
    /// `old..new` in short ids, as git prints a branch update.
    var range: String { "\(from?.short() ?? "(none)")..\(to.short())" }
}

/// Writes to standard output without Swift's print buffering surprises. When the reader has
/// gone (`tidemark log | head -1`), the process ends as a tool killed by SIGPIPE does (141),
/// silently: the output is only written once the command's work is done.
/// Any other error (a full disk, `>/dev/full`) is kept, and the command then ends with git's
/// `fatal: write failure on 'stdout'`, exit 128 (``standardOutputFailure()``): an empty
/// `status --json > state.json` must not pass for a report.
func emit(_ text: String) {
    guard !writeAll(1, text) else { return }
    if errno == EPIPE { exitProcess(128 + SIGPIPE) }
    _ = stdoutWriteError.compareExchange(expected: 0, desired: errno, ordering: .relaxed)
}

/// The `errno` of the first failed write to stdout (0 when none failed).
private let stdoutWriteError = Atomic<Int32>(0)

/// Git's message for output that could not be written (``emit(_:)``, or what `print` left
/// buffered), nil when all of it was.
func standardOutputFailure() -> String? {
    if fflush(nil) != 0, errno != EPIPE {
        _ = stdoutWriteError.compareExchange(expected: 0, desired: errno, ordering: .relaxed)
    }
    let code = stdoutWriteError.load(ordering: .relaxed)
    return code == 0 ? nil : "write failure on 'stdout': \(String(cString: strerror(code)))"
}

/// Opens `/dev/null` on standard input, output or error when the process started with it closed
/// (`tidemark log >&-`), as git does: else the first file the run opens (a lock, an item being
/// written) takes that number, and what is written to stdout or stderr lands in it.
func openClosedStandardDescriptors() {
    for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
        let opened = open("/dev/null", O_RDWR)
        if opened >= 0, opened != descriptor {
            dup2(opened, descriptor)
            close(opened)
        }
    }
}

/// `text` with each control character other than a newline or tab (C0, DEL, C1) written as
/// octal escapes of its UTF-8 bytes (`\033`), as git quotes names: whatever a server or a file
/// name put in a message, none of its bytes drives the terminal. Names the engine quoted
/// already hold no such character and come through unchanged.
func terminalSafe(_ text: String) -> String {
    func unsafe(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 32 && scalar != "\n" && scalar != "\t") || (0x7F...0x9F).contains(scalar.value)
    }
    guard text.unicodeScalars.contains(where: unsafe) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        guard unsafe(scalar) else { out.unicodeScalars.append(scalar); continue }
        for byte in String(scalar).utf8 {
            let octal = String(byte, radix: 8)
            out += "\\" + String(repeating: "0", count: 3 - octal.count) + octal
        }
    }
    return out
}

/// Writes to standard error; a closed or broken stderr (`2>&1 | head -1`) is ignored, so the
/// command goes on and ends as it would have (FileHandle's `write` traps on EPIPE: on a
/// dispatch thread, which blocks SIGPIPE, that crashed a sync half way).
func writeStandardError(_ text: String) {
    writeAll(2, text)
}

/// Writes all of `text` to `descriptor`; false (with `errno` set) on an error other than EINTR.
@discardableResult
private func writeAll(_ descriptor: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        bytes = bytes.dropFirst(written)
    }
    return true
}

/// Encodes a value as JSON (sorted keys, indented) followed by a newline.
func emitJSON<T: Encodable>(_ value: T) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    if let data = try? encoder.encode(value) {
        emit(String(decoding: data, as: UTF8.self) + "\n")
    }
}

/// "3 minutes ago", like git's relative dates.
func relative(_ date: Date, now: Date = Date()) -> String {
    let seconds = Int(now.timeIntervalSince(date))
    func ago(_ count: Int, _ unit: String) -> String { "\(count) \(unit)\(count == 1 ? "" : "s") ago" }
    if seconds < 0 { return "in the future" }
    if seconds < 90 { return ago(seconds, "second") }
    if seconds < 90 * 60 { return ago(seconds / 60, "minute") }
    if seconds < 36 * 3600 { return ago(seconds / 3600, "hour") }
    return ago(seconds / 86_400, "day")
}
