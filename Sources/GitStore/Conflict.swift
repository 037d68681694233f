/// Which sides an unmerged path has in the index (stages 1, 2 and 3: the common ancestor, ours,
/// theirs), named as `git status` names them.
public enum Conflict: String, Sendable, CaseIterable {
    case bothDeleted = "DD", addedByUs = "AU", deletedByThem = "UD", addedByThem = "UA"
    case deletedByUs = "DU", bothAdded = "AA", bothModified = "UU"

    /// The kind of conflict a path with these stages is. A path with neither our side nor
    /// theirs is one both deleted, as git counts it.
    public init(ancestor: Bool, ours: Bool, theirs: Bool) {
        switch (ancestor, ours, theirs) {
        case (_, true, true): self = ancestor ? .bothModified : .bothAdded
        case (true, true, false): self = .deletedByThem
        case (true, false, true): self = .deletedByUs
        case (false, true, false): self = .addedByUs
        case (false, false, true): self = .addedByThem
        default: self = .bothDeleted
        }
    }

    /// `git status`'s words for it: `both modified`, `deleted by them`, ...
    public var label: String {
        switch self {
        case .bothDeleted: "both deleted"
        case .addedByUs: "added by us"
        case .deletedByThem: "deleted by them"
        case .addedByThem: "added by them"
        case .deletedByUs: "deleted by us"
        case .bothAdded: "both added"
        case .bothModified: "both modified"
        }
    }
}
