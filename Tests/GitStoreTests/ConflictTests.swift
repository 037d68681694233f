import Testing
import GitStore

struct ConflictTests {
    /// The stages an unmerged path has give git's kind of conflict: wt-status.c numbers them by a
    /// mask (1 the ancestor, 2 ours, 4 theirs) and names mask 1 to 7 DD AU UD UA DU AA UU.
    @Test func stagesNameTheConflictAsGitDoes() {
        let git = ["DD", "AU", "UD", "UA", "DU", "AA", "UU"]
        for mask in 1...7 {
            let conflict = Conflict(ancestor: mask & 1 != 0, ours: mask & 2 != 0, theirs: mask & 4 != 0)
            #expect(conflict.rawValue == git[mask - 1], "mask \(mask)")
        }
        #expect(Conflict.allCases.map(\.label) == ["both deleted", "added by us", "deleted by them", "added by them",
                                                   "deleted by us", "both added", "both modified"])
    }
}
