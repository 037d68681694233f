import Foundation

/// A value computed on another thread while the caller goes on; ``value`` waits for it. The work
/// is always waited for before this is released, so what it captured outlives it. GitStore's
/// ``PendingBlob`` and ``IndexPreload`` run on it, and so does the engine's manifest read.
public final class Background<Value>: @unchecked Sendable {
    private let done = DispatchGroup()
    // Written by the working thread before it leaves `done`; read only after waiting on it.
    private var result: Value?

    public init(_ work: @escaping @Sendable () -> Value) {
        done.enter()
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            result = work()
            done.leave()
        }
    }

    /// The value, once computed.
    public var value: Value {
        done.wait()
        return result!
    }

    /// True once the value is computed (``value`` then returns at once).
    public var isDone: Bool { done.wait(timeout: .now()) == .success }

    deinit { done.wait() }
}
