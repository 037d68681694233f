import GitStore
import Upstreams

// The vocabulary of the engine's public API, so apps and the CLI import only `Tidemark`.

/// An upstream item id (its exact bytes).
public typealias ItemID = Upstreams.ItemID
/// An upstream `lastModified`: raw text and instant.
public typealias Timestamp = Upstreams.Timestamp
/// A git object id; snapshots are named by their commit id.
public typealias ObjectID = GitStore.ObjectID
/// A place items come from; implement it to mirror a source of your own.
public typealias Upstream = Upstreams.Upstream
/// One HTTP request as an upstream adapter made it (secrets redacted), for request observers.
public typealias HTTPRequestRecord = Upstreams.HTTPRequestRecord
/// Receives an ``HTTPRequestRecord`` after each request; see ``Mirror/setRequestObserver(_:)``.
public typealias HTTPRequestObserver = Upstreams.HTTPRequestObserver
