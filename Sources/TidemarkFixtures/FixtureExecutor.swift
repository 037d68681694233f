import Foundation

/// A task executor with threads of its own, outside Swift's cooperative pool (and outside
/// libdispatch's width-limited global queues).
///
/// The fixture server runs on one (``fixture``): tests block pool threads while a `tidemark`
/// child process runs (`Process.waitUntilExit`), and on a 2-core machine the pool has 2 threads,
/// so two such tests at once would otherwise starve the in-process server the children talk to.
/// End-to-end tests run their bodies on another, for the same reason.
public final class ThreadPoolExecutor: TaskExecutor, @unchecked Sendable {
    /// The fixture server's executor.
    public static let fixture = ThreadPoolExecutor(threads: 4, name: "tidemark-fixture")

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    /// Starts `threads` threads that live as long as the process.
    public init(threads: Int, name: String) {
        for index in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }
}
