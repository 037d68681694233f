import Foundation
import Tidemark

/// The live progress line on stderr (`\r` updates, at most ~10 a second, cleared at the end) and
/// the `--verbose` request log. Never writes to stdout. Safe to call from concurrent tasks.
final class ProgressLine: @unchecked Sendable {
    private let draw: Bool
    private let verbose: Bool
    private let write: @Sendable (String) -> Void
    private let clock = ContinuousClock()
    private let lock = NSLock()
    /// Smallest time between two redraws.
    private let interval: Swift.Duration = .milliseconds(100)

    private var text: String?
    private var shownWidth = 0
    private var lastDraw: ContinuousClock.Instant?
    private var phaseKey = ""
    private var phaseStart: ContinuousClock.Instant
    private var requests = 0
    private var bytes = 0
    private var finished = false

    /// - Parameters:
    ///   - draw: show the progress line.
    ///   - verbose: log every HTTP request.
    ///   - write: where text goes (stderr by default; tests capture it).
    init(draw: Bool, verbose: Bool,
         write: @escaping @Sendable (String) -> Void = { writeStandardError($0) }) {
        self.draw = draw
        self.verbose = verbose
        self.write = write
        self.phaseStart = clock.now
    }

    /// Updates the line for an engine event.
    func handle(_ event: ProgressEvent) {
        lock.withLock {
            guard draw, !finished else { return }
            let now = clock.now
            let key: String
            var final = false
            switch event {
            case .listing(let collection, let items):
                key = "list \(collection) \(items == 0 ? "start" : "end")"
                final = items > 0
            case .downloading(let collection, let done, let total):
                key = "download \(collection)"
                final = done == total
            case .storing:
                key = "store"
            case .checkingOut:
                key = "checkout"
            }
            let newPhase = key != phaseKey
            if newPhase && !key.hasSuffix(" end") {
                phaseKey = key
                phaseStart = now
                requests = 0
                bytes = 0
            } else if newPhase {
                phaseKey = key
            }
            text = describe(event, now: now)
            redraw(now: now, force: newPhase || final)
        }
    }

    /// Counts a request for the line and, with `--verbose`, logs it.
    func handle(_ record: HTTPRequestRecord) {
        lock.withLock {
            guard !finished else { return }
            requests += 1
            bytes += record.bytes
            if verbose {
                clear()
                write(ProgressLine.describe(record) + "\n")
                lastDraw = nil
            }
            if draw, phaseKey.hasPrefix("list "), phaseKey.hasSuffix(" start") {
                let collection = phaseKey.dropFirst(5).dropLast(6)
                text = "Listing \(collection): \(requests) request\(requests == 1 ? "" : "s"), \(ProgressLine.size(bytes))"
            }
            redraw(now: clock.now, force: verbose)
        }
    }

    /// Clears the line; later events are ignored.
    func finish() {
        lock.withLock {
            clear()
            finished = true
        }
    }

    // MARK: - Drawing (lock held)

    private func redraw(now: ContinuousClock.Instant, force: Bool) {
        guard draw, let text else { return }
        if !force, let lastDraw, now - lastDraw < interval { return }
        let shown = String(text.prefix(ProgressLine.columns() - 1))
        let width = shown.count
        write("\r" + shown + String(repeating: " ", count: max(0, shownWidth - width)))
        shownWidth = width
        lastDraw = now
    }

    private func clear() {
        guard shownWidth > 0 else { return }
        write("\r" + String(repeating: " ", count: shownWidth) + "\r")
        shownWidth = 0
    }

    private func describe(_ event: ProgressEvent, now: ContinuousClock.Instant) -> String {
        switch event {
        case .listing(let collection, 0):
            return "Listing \(collection)..."
        case .listing(let collection, let items):
            return "Listed \(collection): \(items) item\(items == 1 ? "" : "s")"
        case .downloading(let collection, let done, let total):
            let percent = total == 0 ? 100 : done * 100 / total
            var line = "Downloading \(collection): \(done)/\(total) (\(percent)%)"
            let elapsed = ProgressLine.seconds(now - phaseStart)
            if done > 0, elapsed > 0.05 {
                let rate = Double(done) / elapsed
                line += String(format: ", %.1f items/s", rate)
                if bytes > 0 { line += ", \(ProgressLine.size(bytes))" }
                if done < total { line += ", ETA \(ProgressLine.clockTime(Double(total - done) / rate))" }
            }
            return line
        case .storing:
            return "Storing..."
        case .checkingOut(let files):
            return "Updating files: \(files)"
        }
    }

    // MARK: - Formatting

    /// `GET <url> 200 1532 B 12 ms`, or `GET <url> failed: <why> (attempt 2, 5003 ms)`.
    static func describe(_ record: HTTPRequestRecord) -> String {
        let retry = (record.attempt > 1 ? ", attempt \(record.attempt)" : "") + (record.waited.map { ", after waiting \($0)" } ?? "")
        if let failure = record.failure {
            return "http: \(record.method) \(record.url) failed: \(failure) (\(record.status == 0 ? "" : "\(record.status), ")\(record.milliseconds) ms\(retry))"
        }
        return "http: \(record.method) \(record.url) \(record.status) (\(record.bytes) bytes, \(record.milliseconds) ms\(retry))"
    }

    static func size(_ bytes: Int) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        if bytes < 1024 * 1024 { return String(format: "%.1f KiB", Double(bytes) / 1024) }
        return String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }

    /// `m:ss`, or `h:mm:ss` past an hour.
    static func clockTime(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.up))
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    static func seconds(_ duration: Swift.Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The terminal's width (`COLUMNS`, then the tty, then 80).
    static func columns() -> Int {
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let value = Int(text), value > 10 { return value }
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 10 { return Int(size.ws_col) }
        return 80
    }
}
