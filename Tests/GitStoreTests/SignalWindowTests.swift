import CPackFormat
import Foundation
import GitStore
import Testing
import TestSupport

/// The index lock's clean-up and the download window share one handler: a lock armed before the
/// window opens and disarmed while it is open leaves the window's handling in place (it put the
/// default action back, and a signal then ended a run that should have stored its downloads),
/// and a signal in the window leaves the lock file to the run.
@Suite("GitStore: the signal window and the index lock's clean-up", .serialized)
struct SignalWindowTests {
    static func handler(of number: Int32) -> Int {
        var action = sigaction()
        sigaction(number, nil, &action)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
    }

    @Test func aLockDisarmedInTheWindowLeavesItsHandling() async throws {
        try await withScratch { root in
            let lock = root + "/index.lock"
            _ = FileManager.default.createFile(atPath: lock, contents: Data("token".utf8))
            let original = Self.handler(of: SIGHUP)
            // Another test of this process may hold the one lock the clean-up keeps: wait for it.
            var armed = false
            for _ in 0..<200 where !armed {
                armed = tidemark_lock_cleanup_arm(lock, "token", nil) == 0
                if !armed { try await Task.sleep(nanoseconds: 10_000_000) }
            }
            try #require(armed)
            let installed = Self.handler(of: SIGHUP)
            SignalWindow.open()
            tidemark_lock_cleanup_disarm()
            #expect(Self.handler(of: SIGHUP) == installed, "the window keeps the handler")
            if original != unsafeBitCast(SIG_IGN, to: Int.self) {
                #expect(installed != original)
                // Raised on a thread of its own that takes it: the shared threads block every signal.
                let raised = DispatchSemaphore(value: 0)
                Thread {
                    var signals = sigset_t()
                    sigemptyset(&signals)
                    sigaddset(&signals, SIGHUP)
                    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                    raise(SIGHUP)
                    raised.signal()
                }.start()
                raised.wait()
                #expect(SignalWindow.received == SIGHUP)
            }
            SignalWindow.close()
            #expect(Self.handler(of: SIGHUP) == original, "closed, the signal acts as before")
            #expect(FileManager.default.fileExists(atPath: lock), "a signal in the window leaves the lock to the run")
        }
    }
}
