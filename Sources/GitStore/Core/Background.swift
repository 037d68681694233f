import Foundation

/// A value computed on another thread while the caller goes on; ``value`` waits for it. The work
/// is always waited for before this is released, so what it captured outlives it.
final class Background<Value>: @unchecked Sendable {
    private let done = DispatchGroup()
    // Written by the working thread before it leaves `done`; read only after waiting on it.
    private var result: Value?

    init(_ work: @escaping @Sendable () -> Value) {
        done.enter()
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            result = work()
            done.leave()
        }
    }

    /// The value, once computed.
    var value: Value {
        done.wait()
        return result!
    }

    deinit { done.wait() }
}
