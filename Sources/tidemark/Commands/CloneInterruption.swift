import Dispatch
import Foundation

/// While a clone runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT remove what it made of the destination, as
/// `git clone` does, then end the process as the signal would: a clone that was interrupted
/// leaves no half-made mirror that a second `clone` would refuse as not empty.
///
/// A destination folder that existed (empty) is emptied, not removed. Worker threads may still be
/// writing when the signal comes: a destination it created is first renamed aside (so their
/// paths no longer lead into it), then removed.
final class CloneInterruption: @unchecked Sendable {
    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    private let destination: String
    private let existed: Bool
    private var sources: [DispatchSourceSignal] = []
    private var watched: [Int32] = []
    /// Guards `phase`: a signal and the clone's own end race.
    private let state = NSLock()
    private var phase = Phase.watching

    private enum Phase {
        /// The clone runs.
        case watching
        /// The clone ended (``finish()``): a signal now only ends the process.
        case finished
        /// A signal came: its handler removes the destination, then ends the process.
        case interrupting
    }

    /// Starts watching; `destination` is the clone's target folder, as the process sees it. A
    /// folder that is not empty is not watched (the clone refuses it and writes nothing there).
    init(destination: String) {
        self.destination = destination
        existed = FileManager.default.fileExists(atPath: destination)
        if existed, ((try? FileManager.default.contentsOfDirectory(atPath: destination)) ?? ["?"]).isEmpty == false { return }
        for number in Self.signals {
            // A handled signal must not also run its default action (ending the process at once).
            // One the process was started ignoring (a background job's SIGINT, nohup's SIGHUP)
            // stays ignored.
            let previous = signal(number, SIG_IGN)
            guard unsafeBitCast(previous, to: Int.self) != unsafeBitCast(SIG_IGN, to: Int.self) else { continue }
            watched.append(number)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in interrupted(by: number) }
            source.resume()
            sources.append(source)
        }
    }

    /// Stops watching: the clone finished or failed (a failed clone cleans up itself). When a
    /// signal's handler has started, never returns: the handler is removing the destination
    /// (the clone may have failed because its files vanished) and ends the process by the
    /// signal, which must not end first with the clone's own error, or leave the folder half
    /// removed.
    func finish() {
        state.lock()
        if phase == .interrupting {
            state.unlock()
            while true { sleep(60) }
        }
        phase = .finished
        state.unlock()
        for source in sources { source.cancel() }
        sources = []
        for number in watched { signal(number, SIG_DFL) }
        watched = []
    }

    private func interrupted(by number: Int32) {
        state.lock()
        let before = phase
        if before == .watching { phase = .interrupting }
        state.unlock()
        // Another signal while the first one's handler removes the destination (systemd's SIGHUP
        // after its SIGTERM) waits for it: ended at once, it left the folder half removed.
        if before == .interrupting { return }
        // After the clone's end the signal only ends the process, leaving the finished mirror.
        guard before == .watching else { endProcess(bySignal: number) }
        let fileManager = FileManager.default
        // Threads still writing (checkout workers go on until their files are written, making
        // folders again) put entries back, or make a removal fail with a folder not empty: the
        // folder is emptied until it stays empty for 150 ms (at most a minute).
        func empty(_ folder: String, removingItToo: Bool) {
            var quiet = 0
            for _ in 0..<1200 where quiet < 3 {
                let entries = (try? fileManager.contentsOfDirectory(atPath: folder)) ?? []
                if entries.isEmpty { quiet += 1 } else { quiet = 0 }
                for entry in entries { try? fileManager.removeItem(atPath: folder + "/" + entry) }
                usleep(50_000)
            }
            if removingItToo { try? fileManager.removeItem(atPath: folder) }
        }
        if existed {
            Self.testPause()
            empty(destination, removingItToo: false)
        } else {
            let aside = destination + ".tidemark-interrupted-\(getpid())"
            if rename(destination, aside) == 0 {
                Self.testPause()
                empty(aside, removingItToo: true)
            }
            // A worker that recreated the folder meanwhile.
            if fileManager.fileExists(atPath: destination) { empty(destination, removingItToo: true) }
        }
        writeStandardError("\ninterrupted: \(existed ? "emptied" : "removed") '\(destination)'\n")
        endProcess(bySignal: number)
    }

    /// Test-only: with `TIDEMARK_INTERRUPT_PAUSE_FILE=<path>`, the handler writes `<path>.reached`
    /// once it has moved the destination aside (before it empties a folder that existed), then
    /// waits (at most 120 s) until `<path>` exists, so a test can let the clone run on meanwhile.
    private static func testPause() {
        guard let file = ProcessInfo.processInfo.environment["TIDEMARK_INTERRUPT_PAUSE_FILE"] else { return }
        _ = FileManager.default.createFile(atPath: file + ".reached", contents: Data())
        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: file), Date() < deadline { usleep(20_000) }
    }
}
