import Dispatch

/// Runs the fixture server's tasks on threads of its own (a private dispatch queue), not on
/// Swift's cooperative pool. Tests block pool threads while a `tidemark` child process runs
/// (`Process.waitUntilExit`); on a 2-core machine the pool has 2 threads, so two such tests at
/// once would otherwise starve the in-process server that the children are talking to.
final class FixtureExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = FixtureExecutor()
    private let queue = DispatchQueue(label: "tidemark-fixture", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
