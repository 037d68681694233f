import Foundation
import Synchronization
import Tidemark

/// While a fetch (a sync's too) lists and downloads, SIGINT, SIGTERM and SIGHUP do not end the
/// process at once: they cancel the run, which stores what it downloaded (as a run whose other
/// downloads failed does, ``MirrorError/interrupted(_:)``), and the process then ends by the
/// signal. A long catch-up under a cron `timeout`, or stopped with Ctrl-C, keeps what each run
/// got instead of starting over.
///
/// The window opens when the fetch starts listing and closes when it starts storing
/// (``ProgressEvent/storing``). Before it (finishing a sync an earlier run left) and after it
/// (objects, refs, the checkout) a signal ends the process at once, as ever: the journal and the
/// index lock's own handler are made for that. A second signal ends it at once too, from a
/// moment after the first: GNU `timeout` sends its SIGTERM twice at once, to the process and to
/// its group, which must not count as two.
final class DownloadInterruption: @unchecked Sendable {
    static let signals = [SIGINT, SIGTERM, SIGHUP]
    /// How long after the first signal another one is taken for the same one sent twice.
    static let repeatWindow: Duration = .milliseconds(300)

    private enum State { case waiting, open, closed }
    private let lock = NSLock()
    private var state = State.waiting
    /// When the watcher first saw the signal.
    private var seen: ContinuousClock.Instant?
    /// The signal noted while the window was open, kept once it closed.
    private var noted: Int32?

    /// The signal that interrupted the run, if one came.
    var signal: Int32? {
        lock.withLock { noted ?? (state == .open ? Mirror.signalNoted : nil) }
    }

    /// Opens the window (once): the signals are noted from now on. The handler is the one the
    /// index lock's clean-up uses (``Mirror/openSignalWindow()``): neither puts back the
    /// other's action, and a signal in the window leaves the lock files to the run.
    func open() {
        lock.withLock {
            guard state == .waiting else { return }
            state = .open
            Mirror.openSignalWindow()
        }
    }

    /// Closes the window: the signals act as they did before it, once ``repeatWindow`` has passed
    /// since a signal was seen (waiting here for the rest of it).
    func close() {
        lock.withLock {
            guard state == .open else {
                state = .closed
                return
            }
            state = .closed
            if Mirror.signalNoted != nil {
                let since = seen ?? ContinuousClock.now
                let left = since + Self.repeatWindow - ContinuousClock.now
                if left > .zero { Self.pause(left) }
            }
            // Closing notes a signal still pending (sent when no thread could take it).
            Mirror.closeSignalWindow()
            noted = Mirror.signalNoted
        }
    }

    /// Blocks the calling thread for `duration` (under a second).
    private static func pause(_ duration: Duration) { usleep(UInt32(duration.components.attoseconds / 1_000_000_000_000)) }

    /// Notes when the signal was first seen.
    private func noteSeen() { lock.withLock { if seen == nil { seen = .now } } }

    /// Runs `body` (a fetch or sync) in a task that a signal received while the window is open
    /// cancels. A run cancelled before it downloaded anything ends the process by the signal
    /// here, saying so; otherwise the caller reports what the run did, then calls
    /// ``endIfInterrupted(_:)``.
    func run<R: Sendable>(_ body: @escaping @Sendable () async throws(MirrorError) -> R) async throws(MirrorError) -> R {
        // A thread of its own watches, with the signals unblocked: libdispatch's threads (the
        // tasks' among them) block every signal, and one sent to the process reaches a handler
        // only through a thread that does not. It sleeps between looks; a signal wakes it. The
        // run starts once it takes the signals: until then no thread of the process would (under
        // load a new thread can wait long for a core, and a signal then stayed pending).
        let done = Atomic(false)
        let running = Mutex<Task<Result<R, MirrorError>, Never>?>(nil)
        await withCheckedContinuation { (watching: CheckedContinuation<Void, Never>) in
            Thread { [self] in
                var signals = sigset_t()
                sigemptyset(&signals)
                for number in Self.signals { sigaddset(&signals, number) }
                pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                watching.resume()
                while !done.load(ordering: .relaxed) {
                    if signal != nil, let task = running.withLock({ $0 }) {
                        noteSeen()
                        task.cancel()
                        // Any further signal ends the process at once, from a moment on.
                        Self.pause(Self.repeatWindow)
                        close()
                        return
                    }
                    usleep(20_000)
                }
            }.start()
        }
        let task = Task { () async -> Result<R, MirrorError> in
            do throws(MirrorError) { return .success(try await body()) } catch { return .failure(error) }
        }
        running.withLock { $0 = task }
        let result = await task.value
        done.store(true, ordering: .relaxed)
        close()
        if signal != nil, case .failure(.cancelled) = result {
            writeStandardError("interrupted: nothing was downloaded yet; the mirror is as it was\n")
            endIfInterrupted(true)
        }
        return try result.get()
    }

    /// Ends the process by the signal that interrupted the run, if one came and `interrupted`
    /// (the run stopped short). One that came too late to cut anything short (as the last
    /// downloads ended) lets the process end as the run did, saying so: the run is complete.
    func endIfInterrupted(_ interrupted: Bool) {
        guard let signal else { return }
        guard interrupted else {
            writeStandardError("Signal \(signal) came as the downloads ended: the run went to its end.\n")
            return
        }
        endProcess(bySignal: signal)
    }
}

extension Mirror {
    /// Sends this mirror's progress events and HTTP requests to `reporter`, and opens and closes
    /// `interruption`'s window as the fetch starts listing and starts storing.
    func report(to reporter: ProgressLine?, interruption: DownloadInterruption?) async {
        guard reporter != nil || interruption != nil else { return }
        setProgressHandler { event in
            switch event {
            case .listing: interruption?.open()
            case .storing: interruption?.close()
            default: break
            }
            reporter?.handle(event)
        }
        if let reporter { setRequestObserver { reporter.handle($0) } }
    }
}

/// Ends the process by signal `number`, as its default action would.
func endProcess(bySignal number: Int32) -> Never {
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
