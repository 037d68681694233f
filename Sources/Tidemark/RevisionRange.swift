/// A range of snapshots as git writes one: `A..B` (B's history without A's) or `A...B` (from
/// their merge base to B, for `diff`). An empty side stands for HEAD (`upstream..` is
/// `upstream..HEAD`, `..upstream` is `HEAD..upstream`).
struct RevisionRange: Equatable {
    var from: String
    var to: String
    /// `A...B`.
    var fromMergeBase: Bool

    /// The range `text` writes, or nil when it holds no `..` (a single revision).
    init?(_ text: String) {
        guard let dots = text.range(of: "..") else { return nil }
        var rest = text[dots.upperBound...]
        fromMergeBase = rest.hasPrefix(".")
        if fromMergeBase { rest = rest.dropFirst() }
        let from = String(text[..<dots.lowerBound])
        let to = String(rest)
        self.from = from.isEmpty ? "HEAD" : from
        self.to = to.isEmpty ? "HEAD" : to
    }
}
