/// Errors upstream adapters throw. Messages name the item, field or URL, never a secret.
public enum UpstreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The upstream spec or an option is not usable.
    case invalidConfiguration(String)
    /// An item in a listing or a body lacks a field or has the wrong type; a `dir` item's file
    /// cannot be read or is not JSON.
    case malformedItem(collection: String, item: String, reason: String)
    /// A listing response could not be understood.
    case malformedListing(collection: String, reason: String)
    /// The upstream folder or endpoint could not be read.
    case unreachable(String)
    /// An HTTP request failed after its retries; status 0 when no response arrived (the
    /// connection broke or timed out after it was made, or a redirect loop).
    case http(status: Int, url: String, message: String)
    /// The same id was listed twice with different versions on one listing page, or with the same
    /// version and different contents.
    case duplicateID(collection: String, item: String)
    /// Two files of a `dir` upstream give the same id (the same name in two subfolders);
    /// `item` names the id and both files.
    case duplicateFile(collection: String, item: String)
    /// The credentials could not be obtained.
    case credentials(String)
    /// An item listed is gone, or no longer the one listed, when its body is asked for (deleted
    /// upstream meanwhile: a 404 or 410, a file removed or replaced). Not a failure of upstream:
    /// the item is left as the mirror had it, and the next run lists it again.
    case goneSinceListed(collection: String, item: String, reason: String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let m): return m
        case .malformedItem(let c, let i, let r): return "\(c)/\(i): \(r)"
        case .malformedListing(let c, let r): return "listing of \(c): \(r)"
        case .unreachable(let m): return m
        case .http(0, let u, let m): return "request to \(u) failed\(m.isEmpty ? "" : ": \(m)")"
        case .http(let s, let u, let m): return "HTTP \(s) from \(u)\(m.isEmpty ? "" : ": \(m)")"
        case .duplicateID(let c, let i): return "\(c)/\(i): listed twice (is the id field unique?)"
        case .duplicateFile(let c, let i):
            return "\(c)/\(i): two files give this id (a dir upstream's id is the file name without .json, "
                + "in whichever subfolder); rename or remove one"
        case .credentials(let m): return m
        case .goneSinceListed(let c, let i, let r): return "\(c)/\(i): \(r)"
        }
    }
}
