import Dispatch
import Foundation

/// While a clone runs, SIGINT, SIGTERM and SIGHUP remove what it made of the destination, as
/// `git clone` does, then end the process as the signal would: a clone that was interrupted
/// leaves no half-made mirror that a second `clone` would refuse as not empty.
///
/// A destination folder that existed (empty) is emptied, not removed. Worker threads may still be
/// writing when the signal comes: a destination it created is first renamed aside (so their
/// paths no longer lead into it), then removed.
final class CloneInterruption: @unchecked Sendable {
    static let signals = [SIGINT, SIGTERM, SIGHUP]
    private let destination: String
    private let existed: Bool
    private var sources: [DispatchSourceSignal] = []
    private var watched: [Int32] = []

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

    /// Stops watching: the clone finished or failed (a failed clone cleans up itself).
    func finish() {
        for source in sources { source.cancel() }
        sources = []
        for number in watched { signal(number, SIG_DFL) }
        watched = []
    }

    private func interrupted(by number: Int32) {
        let fileManager = FileManager.default
        if existed {
            for entry in (try? fileManager.contentsOfDirectory(atPath: destination)) ?? [] {
                try? fileManager.removeItem(atPath: destination + "/" + entry)
            }
        } else {
            let aside = destination + ".tidemark-interrupted-\(getpid())"
            if rename(destination, aside) == 0 { try? fileManager.removeItem(atPath: aside) }
            // A worker that recreated the folder meanwhile.
            try? fileManager.removeItem(atPath: destination)
        }
        writeStandardError("\ninterrupted: removed '\(destination)'\n")
        // Dispatch's threads, this one included, may all block the signal (libdispatch reads
        // signals through a signalfd), and a signal sent to the process then stays pending: this
        // thread unblocks it first, so the process ends by it here, with the signal's status.
        signal(number, SIG_DFL)
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, number)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        kill(getpid(), number)
        sleep(5)
        _exit(128 + number)
    }
}
