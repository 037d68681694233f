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

// What an ``Upstream`` of one's own works with, and the errors the engine's carry.

/// One item as a listing names it.
public typealias ListedItem = Upstreams.ListedItem
/// The versions the mirror holds of a collection, which a listing may skip.
public typealias CachedVersions = Upstreams.CachedVersions
/// ``CachedVersions`` of a collection the mirror holds nothing of.
public typealias NoCachedVersions = Upstreams.NoCachedVersions
/// What an upstream lists for a collection.
public typealias Listing = Upstreams.Listing
/// An item's body as an upstream downloads it (or that the cached one is current).
public typealias FetchedBody = Upstreams.FetchedBody
/// Errors upstream adapters throw (``MirrorError/upstream(_:)``).
public typealias UpstreamError = Upstreams.UpstreamError
/// An upstream's traffic: requests made, bytes received.
public typealias HTTPStatistics = Upstreams.HTTPStatistics
/// An upstream spec (`kind:location`) with its options (``MirrorSettings``).
public typealias UpstreamConfiguration = Upstreams.UpstreamConfiguration
/// Which sides a conflict git left has (``ItemStatus/conflict``), named as `git status` names them.
public typealias Conflict = GitStore.Conflict
/// A libgit2 failure (``MirrorError/git(_:)``).
public typealias GitError = GitStore.GitError
