import Foundation
import Testing
import TestSupport
import Tidemark
import Upstreams

@Suite("Mirror engine over an in-memory upstream")
struct MirrorTests {
    func seeded(_ count: Int) -> TestUpstream {
        let upstream = TestUpstream()
        for index in 0..<count { upstream.put(ItemID("item-\(index)"), "2024-01-01T00:00:\(String(format: "%02d", index % 60))Z") }
        return upstream
    }

    @Test func cloneStoresEveryItemAndAFirstSnapshot() async throws {
        try await withScratch { path in
            let upstream = seeded(12)
            let (mirror, report) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            #expect(report.outcome == .updated)
            #expect(report.counts == ChangeCounts(added: 12))
            #expect(upstream.takeDownloads().count == 12)
            let files = try FileManager.default.contentsOfDirectory(atPath: path + "/m/items").sorted()
            #expect(files.count == 12 && files.first == "item-0.json")
            #expect(try await mirror.status().isClean)
            let log = try await mirror.log()
            #expect(log.count == 1 && log[0].new == 12 && log[0].items == 12)
            #expect(log[0].collections.first?.watermark == "2024-01-01T00:00:11Z")
            try git(["fsck", "--strict"], in: path + "/m")
        }
    }

    /// Items listed with their bodies are stored as listed, never downloaded (the engine called
    /// `fetch` for them anyway, so an adapter trusting ``ListedItem/body`` failed to clone), and
    /// a dry run plans no download for them, as the sync then makes none.
    @Test func bodiesTheListingCarriesAreStoredWithoutADownload() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            upstream.listsBodies = true
            let (mirror, report) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            #expect(report.counts == ChangeCounts(added: 3) && report.fetch?.downloaded == 3)
            upstream.put(ItemID("item-1"), "2024-02-01T00:00:00Z", body: #"{"id": "item-1", "listed": true}"#)
            let plan = try await mirror.sync(SyncOptions(dryRun: true))
            #expect(plan.plannedDownloads == 0 && plan.counts == ChangeCounts(changed: 1))
            let synced = try await mirror.sync()
            #expect(synced.counts == ChangeCounts(changed: 1) && synced.fetch?.failures == [])
            #expect(upstream.takeDownloads().isEmpty)
            let stored = try String(contentsOfFile: path + "/m/items/item-1.json", encoding: .utf8)
            #expect(stored.contains("\"listed\": true"), "\(stored)")
            try git(["fsck", "--strict"], in: path + "/m")
        }
    }

    /// An item stored from a listing made within the second its date names can change again in
    /// that second and keep its date (WordPress's `modified_gmt` counts whole seconds): the next
    /// sync downloads it again, as git compares a racily clean file's contents, and once a later
    /// listing has checked it, no more. An item dated well before the listing is not asked for.
    @Test func anItemDatedAsLateAsTheListingIsDownloadedAgainOnce() async throws {
        try await Self.withARacyClone { second, path in
            let upstream = TestUpstream()
            upstream.listsDatesOnly = true
            let date = Timestamp(seconds: second).raw
            upstream.put(ItemID("racy"), date, body: #"{"edit": 1}"#)
            upstream.put(ItemID("same"), date, body: #"{"edit": 1}"#)
            upstream.put(ItemID("old"), "2024-01-01T00:00:00Z")
            _ = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            guard Self.clonedWithin(second) else { return false }
            try git(["config", "tidemark.overlap", "0"], in: path + "/m")
            let mirror = try await Mirror.open(at: path + "/m", upstream: upstream)
            _ = upstream.takeDownloads()
            // Edited again within its second: the same date.
            upstream.put(ItemID("racy"), date, body: #"{"edit": 2}"#)
            let plan = try await mirror.sync(SyncOptions(dryRun: true))
            #expect(plan.plannedDownloads == 2)
            // The next sync starts a second or more after that date: its listing checks it for good.
            while Timestamp(date: Date()).seconds < second + 2 { try await Task.sleep(nanoseconds: 50_000_000) }
            _ = try await mirror.fetch()
            #expect(upstream.takeDownloads().sorted() == [ItemID("racy"), ItemID("same")])
            // The one whose body changed is a change (status, the dry run and log count it); the
            // other is not.
            #expect(try await mirror.status().behind == ChangeCounts(changed: 1))
            let fetchedPlan = try await mirror.sync(SyncOptions(dryRun: true))
            #expect(fetchedPlan.counts == ChangeCounts(changed: 1) && fetchedPlan.plannedDownloads == 0, "\(fetchedPlan.counts)")
            let synced = try await mirror.sync()
            #expect(synced.counts == ChangeCounts(changed: 1), "\(synced.counts)")
            #expect(try await mirror.status().isClean)
            let stored = try String(contentsOfFile: path + "/m/items/racy.json", encoding: .utf8)
            #expect(stored.contains("\"edit\": 2"), "\(stored)")
            // Checked by a listing made after its second: not asked for again.
            let again = try await mirror.sync()
            #expect(upstream.takeDownloads().isEmpty && again.counts == ChangeCounts() && again.outcome == .upToDate)
            return true
        }
    }

    /// The current second, waited for until it has at least half a second left: a clone started
    /// now lists within it.
    static func earlyInASecond() async throws -> Int64 {
        while Timestamp(date: Date()).nanoseconds > 500_000_000 { try await Task.sleep(nanoseconds: 20_000_000) }
        return Timestamp(date: Date()).seconds
    }

    /// Runs `body` in a fresh scratch folder with the current second (``earlyInASecond()``) until
    /// the clone it makes lists within that second, as its items must be racily clean: a loaded
    /// machine can take longer (a full suite beside two kill loops took 62 s for one such test,
    /// and its assertions failed on a premise that did not hold). `body` returns false when its
    /// clone ended past the second (``clonedWithin(_:)``), before it asserts anything else.
    static func withARacyClone(_ body: (_ second: Int64, _ path: String) async throws -> Bool) async throws {
        for _ in 0..<10 {
            if try await withScratch({ path in try await body(try await earlyInASecond(), path) }) { return }
        }
        Issue.record("no clone listed within its own second in 10 attempts")
    }

    /// Whether it is still `second`: a clone that returned now listed within it.
    static func clonedWithin(_ second: Int64) -> Bool { Timestamp(date: Date()).seconds == second }

    /// A racily clean item whose download failed is checked again by the next run, though that
    /// run's failed snapshot was listed well after its date (its edit was lost for good), and
    /// its changed body is one change; one the failed run did check is not asked for again; the
    /// same instant listed in other words with the same body changes no line (it made a snapshot
    /// of "no changes").
    /// An item dated by a day alone (`2024-05-01`) may be edited again that day under the same
    /// date: it is racily clean through its whole day, not only within the overlap of its
    /// midnight, so a second edit the same day is downloaded.
    @Test func anItemDatedByItsDayIsCheckedThroughThatDay() async throws {
        try await withScratch { path in
            let upstream = TestUpstream()
            upstream.listsDatesOnly = true
            let today = String(Timestamp(date: Date()).raw.prefix(10))
            upstream.put(ItemID("today"), today, body: #"{"edit": 1}"#)
            upstream.put(ItemID("old"), "2024-01-01", body: #"{"edit": 1}"#)
            _ = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let mirror = try await Mirror.open(at: path + "/m", upstream: upstream)
            _ = upstream.takeDownloads()
            upstream.put(ItemID("today"), today, body: #"{"edit": 2}"#)
            _ = try await mirror.sync()
            #expect(upstream.takeDownloads() == [ItemID("today")], "the day-old one is settled")
            #expect(try await mirror.cachedContents(of: "today", in: "items").map { String(decoding: $0, as: UTF8.self) }?
                .contains("2") == true)
        }
    }

    @Test func aRacilyCleanItemStaysSoUntilADownloadOfItSucceeds() async throws {
        try await Self.withARacyClone { second, path in
            let upstream = TestUpstream()
            upstream.listsDatesOnly = true
            upstream.put(ItemID("racy"), Timestamp(seconds: second).raw, body: #"{"edit": 1}"#)
            upstream.put(ItemID("words"), Timestamp(seconds: second).raw, body: #"{"edit": 1}"#)
            upstream.put(ItemID("other"), "2024-01-01T00:00:00Z")
            _ = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            guard Self.clonedWithin(second) else { return false }
            try git(["config", "tidemark.overlap", "0"], in: path + "/m")
            let mirror = try await Mirror.open(at: path + "/m", upstream: upstream)
            upstream.put(ItemID("racy"), Timestamp(seconds: second).raw, body: #"{"edit": 2}"#)
            upstream.put(ItemID("words"), Timestamp(seconds: second).raw.replacingOccurrences(of: "Z", with: ".000+00:00"), body: #"{"edit": 1}"#)
            upstream.put(ItemID("other"), "2024-02-01T00:00:00Z")
            upstream.fail([ItemID("racy")])
            while Timestamp(date: Date()).seconds < second + 2 { try await Task.sleep(nanoseconds: 50_000_000) }
            await #expect { _ = try await mirror.sync() } throws: {
                if case .incompleteSync(let report) = $0 as? MirrorError { return report.fetch?.failures.count == 1 }
                return false
            }
            upstream.fail([])
            _ = upstream.takeDownloads()
            let report = try await mirror.sync()
            // Only the one that failed: the other, checked by the failed run, is not asked for again.
            #expect(upstream.takeDownloads().sorted() == [ItemID("racy")])
            #expect(report.counts == ChangeCounts(changed: 1), "\(report.counts)")
            #expect(try String(contentsOfFile: path + "/m/items/racy.json", encoding: .utf8).contains("\"edit\": 2"))
            // Checked by a run without failures: nothing is asked for, and nothing changes.
            let again = try await mirror.sync()
            #expect(upstream.takeDownloads().isEmpty && again.outcome == .upToDate, "\(again.outcome)")
            return true
        }
    }

    /// A mirror an app made with its own upstream, opened without it: the fetch says how it opens
    /// (it said only "unknown upstream kind 'test'"); the app's `Mirror.open(at:upstream:)` works.
    @Test func aMirrorOfAnAppsOwnUpstreamSaysHowItOpens() async throws {
        try await withScratch { path in
            let upstream = seeded(2)
            _ = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            do {
                _ = try await Mirror.open(at: path + "/m").fetch()
                Issue.record("the fetch had no upstream to list")
            } catch {
                #expect("\(error)".contains("unknown upstream kind 'test'") && "\(error)".contains("Mirror.open(at:upstream:)"), "\(error)")
            }
            #expect(try await Mirror.open(at: path + "/m", upstream: upstream).fetch().failures.isEmpty)
        }
    }

    /// A cancelled task's clone or sync throws ``MirrorError/cancelled`` (it threw an upstream
    /// error whose text was "CancellationError()"); the clone's destination is removed, and the
    /// mirror a cancelled sync leaves syncs as before.
    @Test func cancellingATaskEndsItsRunAsCancelled() async throws {
        /// The error of `operation` run in a task cancelled 0.2 s after it starts.
        func cancelledError<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> (any Error)? {
            let task = Task { try await operation() }
            try await Task.sleep(nanoseconds: 200_000_000)
            task.cancel()
            do {
                _ = try await task.value
                return nil
            } catch {
                return error
            }
        }
        try await withScratch { path in
            let upstream = seeded(3)
            upstream.listingDelay = 5
            let cloneError = try await cancelledError { try await Mirror.clone("test:memory", to: path + "/c", upstream: upstream) }
            guard case .cancelled? = cloneError as? MirrorError else { Issue.record("\(String(describing: cloneError))"); return }
            #expect(!FileManager.default.fileExists(atPath: path + "/c"))

            upstream.listingDelay = 0
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let head = try await mirror.log().first?.commit
            upstream.put(ItemID("item-1"), "2024-03-01T00:00:00Z")
            upstream.listingDelay = 5
            let syncError = try await cancelledError { try await mirror.sync() }
            #expect(syncError.map { "\($0)" } == "cancelled; the mirror is as it was before the run")
            #expect(try await mirror.log().first?.commit == head)
            upstream.listingDelay = 0
            #expect(try await mirror.sync().counts == ChangeCounts(changed: 1))
            try git(["fsck", "--strict"], in: path + "/m")
        }
    }

    /// A task cancelled during its downloads stores what did download onto the upstream-tracking
    /// ref (the branch stays), throws ``MirrorError/interrupted(_:)`` counting what it did not get,
    /// and the next sync downloads only that. (It threw `cancelled` and kept nothing: a long
    /// catch-up stopped by a time limit started over each run.)
    @Test func aTaskCancelledDuringItsDownloadsStoresWhatDidDownload() async throws {
        try await withScratch { path in
            let upstream = seeded(5)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let head = try await mirror.log().first?.commit
            _ = upstream.takeDownloads()
            for index in 0..<5 { upstream.put(ItemID("item-\(index)"), "2024-03-01T00:00:0\(index)Z") }
            // The fourth download hangs: the first three are in, the fifth not started.
            let caught = try await Self.cancelled(after: 3, downloadsFrom: upstream) { _ = try await mirror.sync(SyncOptions(fetch: FetchOptions(jobs: 1))) }
            guard case .interrupted(let report)? = caught else { Issue.record("\(String(describing: caught))"); return }
            #expect(report.downloaded == 3 && report.notDownloaded == 2 && report.interrupted, "\(report)")
            #expect("\(caught!)".hasPrefix("interrupted: stored the 3 items downloaded onto tidemark/upstream; "
                                          + "the next fetch or sync gets the rest (2 items not downloaded)"), "\(caught!)")
            #expect(try await mirror.log().first?.commit == head)
            let stored = try await mirror.log(from: "tidemark/upstream")
            #expect(stored.count == 2 && stored.first?.commit == report.current?.hex && stored.first?.changed == 3)
            #expect(upstream.takeDownloads().count == 4)
            // Status says what the tracking snapshot lacks, until a fetch gets it.
            let partial = try await mirror.status()
            #expect(partial.fetchInterrupted == "2 items not downloaded" && !partial.isClean, "\(String(describing: partial.fetchInterrupted))")

            // Applied offline, what was stored makes no fresh cache: the fetch was interrupted.
            #expect(try await mirror.sync(SyncOptions(offline: true)).counts == ChangeCounts(changed: 3))
            let next = try await mirror.sync(SyncOptions(ifStaleSeconds: 3600))
            #expect(next.counts == ChangeCounts(changed: 2) && next.fetch?.downloaded == 2, "\(next.outcome)")
            #expect(upstream.takeDownloads().count == 2)
            #expect(try await mirror.status().fetchInterrupted == nil)
            try git(["fsck", "--strict"], in: path + "/m")
        }
    }

    /// The error of `run` (a fetch or sync with one job) cancelled once the download after the
    /// first `count` (which hangs until then) has started; nil when it threw none.
    static func cancelled(after count: Int, downloadsFrom upstream: TestUpstream,
                          _ run: @escaping @Sendable () async throws -> Void) async throws -> MirrorError? {
        upstream.downloadsBeforeHanging = count
        defer { upstream.downloadsBeforeHanging = nil }
        let task = Task { try await run() }
        while upstream.downloadsStarted < count + 1 { try await Task.sleep(nanoseconds: 5_000_000) }
        task.cancel()
        do { try await task.value } catch { return error as? MirrorError }
        return nil
    }

    /// A long catch-up of items dated within the last seconds, interrupted run after run, moves
    /// on: each run's snapshot counts as a listing that checked the racily clean items it
    /// stored, and those it did not get are noted for the next. (Every interrupted run
    /// downloaded the items the ones before had stored again first, and the catch-up never
    /// finished: an operator's, session 33.)
    @Test func interruptedRunsOfACatchUpOfRecentItemsMoveOn() async throws {
        try await Self.withARacyClone { second, path in
            let upstream = TestUpstream()
            upstream.listsDatesOnly = true
            for index in 0..<8 { upstream.put(ItemID("item-\(index)"), Timestamp(seconds: second).raw, body: #"{"v": 1}"#) }
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            guard Self.clonedWithin(second) else { return false }
            // Edited in a later second; the runs list them two seconds on (outside the overlap of 1 s).
            for index in 0..<8 { upstream.put(ItemID("item-\(index)"), Timestamp(seconds: second + 1).raw, body: #"{"v": 2}"#) }
            try git(["config", "tidemark.overlap", "0"], in: path + "/m")
            let reopened = try await Mirror.open(at: path + "/m", upstream: upstream)
            while Timestamp(date: Date()).seconds < second + 3 { try await Task.sleep(nanoseconds: 50_000_000) }
            var downloads: [[ItemID]] = []
            for _ in 0..<3 {
                _ = upstream.takeDownloads()
                _ = try await Self.cancelled(after: 2, downloadsFrom: upstream) { _ = try await reopened.fetch(FetchOptions(jobs: 1)) }
                downloads.append(upstream.takeDownloads())
            }
            // Each run stores two new ones (the third is cut short): none asks for one stored before.
            let stored = downloads.map { Array($0.prefix(2)) }
            #expect(Set(stored.flatMap { $0 }).count == 6, "\(downloads)")
            let last = try await reopened.sync()
            #expect(upstream.takeDownloads().count == 2 && last.counts == ChangeCounts(changed: 8), "\(last.counts)")
            return true
        }
    }

    /// An interrupted run that checked racily clean items and stored nothing new (their bodies
    /// had not changed: no snapshot) still counts for them: the next run does not ask for them
    /// again. (The note went with a snapshot only, and runs that got no further than those items
    /// repeated them for good.)
    @Test func anInterruptedRunThatOnlyCheckedRacilyCleanItemsCountsForThem() async throws {
        try await withScratch { path in
            let upstream = TestUpstream()
            upstream.listsDatesOnly = true
            upstream.put(ItemID("z-new"), "2024-01-01T00:00:00Z")
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            try git(["config", "tidemark.overlap", "0"], in: path + "/m")
            let reopened = try await Mirror.open(at: path + "/m", upstream: upstream)
            // Stored by a listing made in their own second: racily clean.
            let second = try await Self.earlyInASecond()
            for name in ["a-racy1", "a-racy2"] { upstream.put(ItemID(name), Timestamp(seconds: second).raw, body: #"{"v": 1}"#) }
            _ = try await reopened.fetch()
            upstream.put(ItemID("z-new"), "2024-02-01T00:00:00Z")
            while Timestamp(date: Date()).seconds < second + 2 { try await Task.sleep(nanoseconds: 50_000_000) }
            _ = upstream.takeDownloads()
            _ = try await Self.cancelled(after: 2, downloadsFrom: upstream) { _ = try await reopened.fetch(FetchOptions(jobs: 1)) }
            #expect(upstream.takeDownloads() == [ItemID("a-racy1"), ItemID("a-racy2"), ItemID("z-new")])
            _ = try await reopened.fetch()
            #expect(upstream.takeDownloads() == [ItemID("z-new")])
        }
    }

    /// Cancelled while listing its second collection, a fetch stores the first one's downloads;
    /// the second stays as it was, its watermark and item count with it.
    @Test func aTaskCancelledWhileListingALaterCollectionStoresTheEarlierOnes() async throws {
        try await withScratch { path in
            let upstream = TestUpstream(collections: ["a", "b"])
            for collection in ["a", "b"] {
                for index in 0..<3 { upstream.put(ItemID("\(collection)-\(index)"), "2024-01-01T00:00:0\(index)Z", in: collection) }
            }
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let before = try await mirror.log(from: "tidemark/upstream").first
            for collection in ["a", "b"] { upstream.put(ItemID("\(collection)-0"), "2024-03-01T00:00:00Z", in: collection) }
            upstream.listingDelays = ["b": 30]
            // The clone's downloads forgotten: the wait below is for the fetch's own.
            _ = upstream.takeDownloads()
            let task = Task { try await mirror.fetch() }
            while upstream.takeDownloads().isEmpty { try await Task.sleep(nanoseconds: 5_000_000) }
            try await Task.sleep(nanoseconds: 100_000_000)
            task.cancel()
            var caught: MirrorError?
            do { _ = try await task.value } catch { caught = error as? MirrorError }
            guard case .interrupted(let report)? = caught else { Issue.record("\(String(describing: caught))"); return }
            #expect(report.unlisted == ["b"] && report.downloaded == 1 && report.notDownloaded == 0)
            let stored = try #require(try await mirror.log(from: "tidemark/upstream").first)
            #expect(stored.changed == 1 && stored.items == 6)
            #expect(stored.collections.map(\.name) == ["a", "b"])
            #expect(stored.collections.last?.watermark == before?.collections.last?.watermark)
            upstream.listingDelays = [:]
            #expect(try await mirror.sync().counts == ChangeCounts(changed: 2))
        }
    }

    /// A listing in which an item changed while it was paged may have missed another: the
    /// versions it found are stored, but the watermark stays until a listing sees everything.
    @Test func aListingThatChangedWhilePagedHoldsTheWatermark() async throws {
        try await withScratch { path in
            let upstream = seeded(5)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.put(ItemID("item-1"), "2024-02-01T00:00:00Z")
            upstream.listingChangedWhilePaging = true
            let held = try await mirror.fetch()
            #expect(held.downloaded == 1 && held.behind == ChangeCounts(changed: 1))
            #expect(try await mirror.log(from: "tidemark/upstream").first?.collections.first?.watermark == "2024-01-01T00:00:04Z")
            // The next fetch that stores something moves it to the newest version that fetch
            // listed (a fetch that finds nothing new makes no snapshot, so it records none). It
            // stays below item-1's version, stored under the held one: a watermark that lags only
            // makes an incremental listing cover more.
            upstream.listingChangedWhilePaging = false
            upstream.put(ItemID("item-2"), "2024-01-15T00:00:00Z")
            _ = try await mirror.fetch()
            #expect(try await mirror.log(from: "tidemark/upstream").first?.collections.first?.watermark == "2024-01-15T00:00:00Z")
        }
    }

    /// An item dated in the future cannot pin the watermark there (an incremental listing from
    /// it would see no later change): it stops at the time the fetch started, its Listed-At.
    @Test func aFutureVersionDoesNotCarryTheWatermarkPastTheListing() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            upstream.put(ItemID("item-1"), "9999-12-31T23:59:59Z")
            let before = Date()
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let text = try #require(try await mirror.log().first?.collections.first?.watermark)
            let watermark = try #require(Timestamp(text))
            #expect(watermark.date >= before.addingTimeInterval(-1) && watermark.date <= Date())
            let listedAt = try git(["log", "-1", "--format=%(trailers:key=Tidemark-Listed-At,valueonly)"], in: path + "/m")
            #expect(Timestamp(listedAt.trimmingCharacters(in: .whitespacesAndNewlines)) == watermark,
                    "capped at the fetch's start: \(listedAt)")
            // The next fetch lists from just before then, and sees a change made now.
            upstream.put(ItemID("item-2"), Timestamp(date: Date()).raw)
            #expect(try await mirror.fetch().downloaded == 1)
            #expect(upstream.lastSince.map { $0 < watermark } == true)
        }
    }

    /// Items whose deletion a listing could not confirm are named by the fetch and by `status`
    /// until a fetch confirms them; they leave `isClean` alone, as vanished items do.
    @Test func unconfirmedDeletionsAreNamedUntilAFetchConfirmsThem() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.unconfirmed = ["items/gone: HTTP 403 from http://x/items/gone: Forbidden"]
            #expect(try await mirror.fetch().unconfirmed == upstream.unconfirmed)
            let status = try await mirror.status()
            #expect(status.fetchUnconfirmed == upstream.unconfirmed && status.isClean)
            upstream.unconfirmed = []
            _ = try await mirror.fetch()
            #expect(try await mirror.status().fetchUnconfirmed.isEmpty)
        }
    }

    /// Items dated by Unix times (milliseconds): a watermark capped at the fetch's start is
    /// written as one too, so the next incremental listing's `since` is in the form upstream takes.
    @Test func aCappedUnixTimeWatermarkStaysAUnixTime() async throws {
        try await withScratch { path in
            let upstream = seeded(2)
            upstream.put(ItemID("item-1"), "1704067200000")
            upstream.put(ItemID("item-2"), "4102444800000")  // 2100: past the fetch's start
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let text = try #require(try await mirror.log().first?.collections.first?.watermark)
            #expect(text.count == 13 && text.allSatisfy(\.isNumber), "\(text)")
            _ = try await mirror.fetch()
            #expect(upstream.lastSince?.isUnixTime == true, "\(String(describing: upstream.lastSince))")
            // `tidemark log` shows such a watermark with its date.
            #expect(Mirror.dateOfUnixTime("1704067200123") == "2024-01-01T00:00:00.123Z" && Mirror.dateOfUnixTime("2024-01-01") == nil)
        }
    }

    /// Versions that are small numbers (a `0` meaning "never", a revision counter) are versions
    /// like any other: they were refused, and failed every listing of the collection. A bumped
    /// counter downloads its item alone; `tidemark log` shows no 1970 date for such a watermark.
    @Test func smallNumbersAreVersionsToo() async throws {
        try await withScratch { path in
            let upstream = TestUpstream()
            upstream.put(ItemID("never"), "0")
            upstream.put(ItemID("counted"), "7")
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            #expect(Set(upstream.takeDownloads()) == [ItemID("never"), ItemID("counted")])
            #expect(try await mirror.log().first?.collections.first?.watermark == "7")
            upstream.put(ItemID("counted"), "8", body: #"{"revision": 8}"#)
            let report = try await mirror.sync()
            #expect(upstream.takeDownloads() == [ItemID("counted")] && report.counts == ChangeCounts(changed: 1))
            #expect(try String(contentsOfFile: path + "/m/items/counted.json", encoding: .utf8).contains("8"))
            #expect(try await mirror.log().first?.collections.first?.watermark == "8" && Mirror.dateOfUnixTime("8") == nil)
            _ = try await mirror.sync()
            let clean = try await mirror.status().isClean
            #expect(upstream.takeDownloads().isEmpty && clean)
        }
    }

    /// Upstream's clock behind this machine's (its items dated 2024 while the fetch runs now):
    /// an item edited on a page already read while a later page is read shows there at its old
    /// version, and the later page lists an edit made after it. The watermark stops at upstream's
    /// time when the listing started (its `Date`), not at the newest version listed (the fetch's
    /// local start time is no cap then), so the next incremental listing covers the first edit.
    @Test func theWatermarkStopsAtUpstreamsTimeWhenTheListingStarted() async throws {
        try await withScratch { path in
            let upstream = seeded(5)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.upstreamTime = Timestamp("2024-03-01T00:00:00Z")
            // item-1 (an early page) was edited at 00:05, after the listing read it; item-3 (a
            // later page) at 00:30, before the listing got there.
            upstream.put(ItemID("item-3"), "2024-03-01T00:30:00Z")
            #expect(try await mirror.fetch().downloaded == 1)
            #expect(try await mirror.log(from: "tidemark/upstream").first?.collections.first?.watermark == "2024-03-01T00:00:00Z")
            upstream.put(ItemID("item-1"), "2024-03-01T00:05:00Z")
            upstream.upstreamTime = Timestamp("2024-03-01T01:00:00Z")
            #expect(try await mirror.fetch().downloaded == 1)
            let since = try #require(upstream.lastSince)
            #expect(since < Timestamp("2024-03-01T00:05:00Z")!, "\(since.raw)")
            // Without a `Date`, the newest version listed (capped at the local start), as before.
            upstream.upstreamTime = nil
            upstream.put(ItemID("item-4"), "2024-03-02T00:00:00Z")
            _ = try await mirror.fetch()
            #expect(try await mirror.log(from: "tidemark/upstream").first?.collections.first?.watermark == "2024-03-02T00:00:00Z")
        }
    }

    @Test func fetchDownloadsOnlyWhatChangedAndStatusReportsIt() async throws {
        try await withScratch { path in
            let upstream = seeded(20)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            _ = upstream.takeDownloads()
            let unchanged = try await mirror.fetch()
            #expect(unchanged.downloaded == 0 && !unchanged.updated)
            #expect(upstream.takeDownloads().isEmpty)

            upstream.put(ItemID("item-1"), "2024-02-01T00:00:00Z")
            upstream.put(ItemID("new"), "2024-02-02T00:00:00Z")
            upstream.remove(ItemID("item-2"))
            let report = try await mirror.fetch()
            #expect(Set(upstream.takeDownloads()) == [ItemID("item-1"), ItemID("new")])
            #expect(report.behind == ChangeCounts(changed: 1, added: 1, deleted: 1))
            let status = try await mirror.status()
            #expect(status.items.map { "\($0.upstream.rawValue)\($0.local.rawValue) \($0.id)" }
                    == ["M  item-1", "D  item-2", "A  new"])
            // Fetch touched neither the branch nor the working tree.
            #expect(FileManager.default.fileExists(atPath: path + "/m/items/item-2.json"))

            let sync = try await mirror.sync()
            #expect(sync.outcome == .updated && sync.counts == ChangeCounts(changed: 1, added: 1, deleted: 1))
            #expect(upstream.takeDownloads().isEmpty)
            #expect(try await mirror.status().isClean)
            #expect(!FileManager.default.fileExists(atPath: path + "/m/items/item-2.json"))
            let watermark = try await mirror.log().first?.collections.first?.watermark
            #expect(watermark == "2024-02-02T00:00:00Z")
            // The new manifest is stored as a delta against the clone's.
            let manifests = try ["HEAD~1", "HEAD"].map {
                try git(["rev-parse", "\($0):.tidemark/items.manifest"], in: path + "/m").trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let objects = try git(["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(deltabase)"], in: path + "/m")
            #expect(objects.split(separator: "\n").contains { $0 == "\(manifests[1]) \(manifests[0])" })
            try git(["fsck", "--strict"], in: path + "/m")
        }
    }

    @Test func hostileIdsStayInsideTheirCollectionAndPassFsck() async throws {
        try await withScratch { path in
            let upstream = TestUpstream()
            for bytes in hostileIDs { upstream.put(ItemID(bytes: bytes), "2024-01-01T00:00:00Z") }
            let (mirror, report) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            #expect(report.counts.added == hostileIDs.count)
            let top = try FileManager.default.contentsOfDirectory(atPath: path + "/m").sorted()
            #expect(top == [".git", ".tidemark", "items"])
            let files = try FileManager.default.contentsOfDirectory(atPath: path + "/m/items")
            #expect(files.count == hostileIDs.count)
            try git(["fsck", "--strict"], in: path + "/m")
            let tree = try git(["ls-tree", "-r", "HEAD"], in: path + "/m")
            #expect(tree.split(separator: "\n").allSatisfy { $0.hasPrefix("100644 blob ") })
            // A plain git clone with NTFS and HFS protection checks every path out.
            try git(["-c", "core.protectNTFS=true", "-c", "core.protectHFS=true", "clone", "-q", path + "/m", path + "/copy"], in: path)
            #expect(try FileManager.default.contentsOfDirectory(atPath: path + "/copy/items").count == hostileIDs.count)
            // Status names them by id, quoted when unusual.
            upstream.put(ItemID(bytes: [97, 10, 98]), "2024-01-01T00:00:00Z")
            _ = try await mirror.fetch()
            #expect(try await mirror.status().items.map(\.id) == [ItemID(bytes: [97, 10, 98])])
        }
    }

    @Test func emptyIdsAreRefusedWithAClearError() async throws {
        try await withScratch { path in
            let upstream = seeded(2)
            upstream.put(ItemID(bytes: []), "2024-01-01T00:00:00Z")
            await #expect { _ = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream) } throws: {
                String(describing: $0).contains("empty id")
            }
            #expect(!FileManager.default.fileExists(atPath: path + "/m"))
        }
    }

    @Test func massDeletionIsRefusedUnlessAllowed() async throws {
        try await withScratch { path in
            let upstream = seeded(10)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let before = try await mirror.log().first?.commit
            upstream.removeAll()
            await #expect { _ = try await mirror.sync() } throws: {
                if case .massDeletion(_, 10, 10, _) = $0 as? MirrorError { return true }
                return false
            }
            #expect(try await mirror.log().first?.commit == before)
            // Status says the fetch was refused, not that the cache is up to date.
            let refused = try await mirror.status()
            #expect(refused.fetchRefused?.hasPrefix("refusing to delete 10 of 10 items of 'items'") == true && !refused.isClean,
                    "\(String(describing: refused.fetchRefused))")
            for index in 0..<4 { upstream.put(ItemID("item-\(index)"), "2024-01-01T00:00:00Z") }
            await #expect(throws: MirrorError.self) { _ = try await mirror.sync() }
            #expect(try await mirror.status().fetchRefused?.hasPrefix("refusing to delete 6 of 10 items") == true)
            // A fetch that stored since (a build that knows nothing of the record wrote only its
            // last-fetch) makes the record stale: no longer shown.
            let lastFetch = path + "/m/.git/tidemark/last-fetch"
            let saved = try String(contentsOfFile: lastFetch, encoding: .utf8)
            try (Timestamp(date: Date().addingTimeInterval(5)).raw + "\n").write(toFile: lastFetch, atomically: true, encoding: .utf8)
            #expect(try await mirror.status().fetchRefused == nil)
            try saved.write(toFile: lastFetch, atomically: true, encoding: .utf8)
            #expect(try await mirror.status().fetchRefused != nil)
            let report = try await mirror.sync(SyncOptions(fetch: FetchOptions(allowMassDelete: true)))
            #expect(report.counts.deleted == 6)
            let after = try await mirror.status()
            #expect(after.fetchRefused == nil && after.isClean)
            // Every id new, as many as are gone (ids read from another field): said so.
            upstream.removeAll()
            for index in 0..<4 { upstream.put(ItemID("uuid-\(index)"), "2024-01-01T00:00:00Z") }
            await #expect { _ = try await mirror.sync() } throws: {
                String(describing: $0).contains("; the same listing brings 4 new items: the ids may have changed "
                                                + "(tidemark.idField set to another field, upstream renumbering)")
            }
        }
    }

    /// The report of a sync that applied what it could and threw for the items that failed.
    static func incompleteSync(_ mirror: Mirror) async -> SyncReport? {
        do {
            _ = try await mirror.sync()
        } catch {
            if case .incompleteSync(let report) = error { return report }
            Issue.record("\(error)")
        }
        return nil
    }

    @Test func failedDownloadsKeepTheWatermarkAndAreRetried() async throws {
        try await withScratch { path in
            let upstream = seeded(5)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            _ = upstream.takeDownloads()
            upstream.put(ItemID("item-1"), "2024-03-05T00:00:00Z")
            upstream.put(ItemID("item-3"), "2024-03-02T00:00:00Z")
            upstream.remove(ItemID("item-4"))
            upstream.fail([ItemID("item-3")])
            let partial = await Self.incompleteSync(mirror)
            #expect(partial?.fetch?.failures.count == 1)
            // What downloaded is applied (item-1); the failed item stays as it was, the deletion
            // and the watermark are held.
            #expect(partial?.counts == ChangeCounts(changed: 1))
            guard case .incompleteFetch? = partial?.outcome else { Issue.record("\(String(describing: partial?.outcome))"); return }
            let head = try await mirror.log()
            #expect(head.count == 2 && head.first?.commit == partial?.current?.hex)
            #expect(head.first?.collections.first?.watermark == "2024-01-01T00:00:04Z")
            let status = try await mirror.status()
            #expect(status.items.isEmpty && status.fetchFailures.count == 1 && !status.isClean, "\(status.items)")
            #expect(FileManager.default.fileExists(atPath: path + "/m/items/item-4.json"))
            _ = upstream.takeDownloads()
            upstream.fail([])
            let report = try await mirror.sync()
            #expect(upstream.takeDownloads() == [ItemID("item-3")])
            #expect(report.counts == ChangeCounts(changed: 1, deleted: 1))
            // item-1, stored by the failed run and listed unchanged now, is the newest: the
            // watermark covers it, although this run did not download it.
            #expect(try await mirror.log().first?.collections.first?.watermark == "2024-03-05T00:00:00Z")
        }
    }

    /// `sync --offline` applies a fetch that could not download an item as it applies any
    /// snapshot, and says what that fetch lacks (its dry run too); once a fetch stores the
    /// item, it says nothing.
    @Test func anOfflineSyncOfAFetchThatLackedItemsSaysSo() async throws {
        try await withScratch { path in
            let upstream = seeded(5)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.put(ItemID("item-1"), "2024-03-05T00:00:00Z")
            upstream.put(ItemID("item-3"), "2024-03-02T00:00:00Z")
            upstream.fail([ItemID("item-3")])
            await #expect { _ = try await mirror.fetch() } throws: {
                if case .incompleteFetch(let report) = $0 as? MirrorError { return report.failures.count == 1 }
                return false
            }
            let plan = try await mirror.sync(SyncOptions(dryRun: true, offline: true))
            let applied = try await mirror.sync(SyncOptions(offline: true))
            #expect(applied.counts == ChangeCounts(changed: 1))
            for warnings in [plan.warnings, applied.warnings] {
                #expect(warnings.count == 1 && warnings[0].hasPrefix("the fetch applied could not download 1 item (it stays as "),
                        "\(warnings)")
            }
            upstream.fail([])
            _ = try await mirror.fetch()
            let complete = try await mirror.sync(SyncOptions(offline: true))
            #expect(complete.counts == ChangeCounts(changed: 1) && complete.warnings.isEmpty, "\(complete.warnings)")
        }
    }

    /// Clones `upstream` twice, applies `change` upstream, then syncs one mirror at once (reusing
    /// what its fetch compared) and the other by a fetch and a separate `sync --offline` (which
    /// compares trees instead). Both must report and write the same; returns the first report.
    func syncBothWays(_ upstream: TestUpstream, options: CloneOptions = CloneOptions(), in path: String,
                      change: () -> Void) async throws -> SyncReport {
        upstream.put(ItemID("same-body"), "2024-01-01T00:00:00Z", body: #"{"constant": true}"#)
        let (one, _) = try await Mirror.clone("test:memory", to: path + "/one", options: options, upstream: upstream)
        let (two, _) = try await Mirror.clone("test:memory", to: path + "/two", options: options, upstream: upstream)
        change()
        upstream.put(ItemID("same-body"), "2024-05-03T00:00:00Z", body: #"{"constant": true}"#)
        let reused = try await one.sync()
        _ = try await two.fetch()
        let compared = try await two.sync(SyncOptions(offline: true))
        #expect(compared.counts == reused.counts)
        #expect(reused.paths == compared.paths)
        #expect(!reused.paths.contains { $0.hasSuffix("/same-body.json") }, "a new version with the same body writes no file")
        let trees = try [path + "/one", path + "/two"].map { try git(["rev-parse", "HEAD^{tree}"], in: $0) }
        #expect(trees[0] == trees[1])
        _ = try git(["fsck", "--strict"], in: path + "/one")
        #expect(try await one.status().isClean)
        #expect(try await two.status().isClean)
        return reused
    }

    @Test func aSyncReusesItsFetchComparisonsExactly() async throws {
        try await withScratch { path in
            let upstream = seeded(30)
            let reused = try await syncBothWays(upstream, in: path) {
                upstream.put(ItemID("item-3"), "2024-05-01T00:00:00Z")
                upstream.put(ItemID("added"), "2024-05-02T00:00:00Z")
                upstream.remove(ItemID("item-4"))
            }
            // `same-body` got a new version with the same body: no content changed, not counted.
            #expect(reused.counts == ChangeCounts(changed: 1, added: 1, deleted: 1))
            #expect(reused.paths.contains("items/added.json") && reused.paths.contains("items/item-4.json"))
        }
    }

    @Test func aLargeSyncOverFanOutFoldersReusesItsFetchComparisonsExactly() async throws {
        // Enough changes over enough fan-out folders that the trees are rebuilt and the files
        // checked out on all cores (the index parsed meanwhile, during the fetch).
        try await withScratch { path in
            let upstream = seeded(2000)
            let reused = try await syncBothWays(upstream, options: CloneOptions(fanout: true), in: path) {
                for index in stride(from: 0, to: 2000, by: 2) { upstream.put(ItemID("item-\(index)"), "2024-05-01T00:00:00Z") }
                for index in 0..<5 { upstream.remove(ItemID("item-\(2 * index + 1)")) }
            }
            #expect(reused.counts == ChangeCounts(changed: 1000, added: 0, deleted: 5), "same-body is not counted")
            #expect(reused.paths.count == 1000 + 5 + 1, "items written or deleted, and the manifest")
            #expect(try git(["diff", "--name-only"], in: path + "/one") == "")
            #expect(try git(["diff", "--cached", "--name-only"], in: path + "/one") == "")
        }
    }

    /// Fan-out folders have three hex digits; a collection stored with two (by an earlier
    /// tidemark) keeps them for the items it gains.
    @Test func aCollectionKeepsTheWidthOfItsFanOutFolders() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            let mirror = path + "/m"
            _ = try await Mirror.clone("test:memory", to: mirror, options: CloneOptions(fanout: true), upstream: upstream)
            let stored = try git(["ls-files", "items"], in: mirror).split(separator: "\n").map(String.init)
            #expect(stored.count == 3 && stored.allSatisfy { $0.wholeMatch(of: /items\/[0-9a-f]{3}\/item-[0-2]\.json/) != nil })
            // The same snapshot as an earlier tidemark stored it: folders of two digits.
            let manifestPath = mirror + "/.tidemark/items.manifest"
            var manifest = String(decoding: FileManager.default.contents(atPath: manifestPath)!, as: UTF8.self)
            for file in stored {
                let parts = file.split(separator: "/")
                let folder = parts[1], old = String(folder.prefix(2))
                try FileManager.default.createDirectory(atPath: mirror + "/items/" + old, withIntermediateDirectories: true)
                _ = try git(["mv", file, "items/\(old)/\(parts[2])"], in: mirror)
                manifest = manifest.replacingOccurrences(of: "\t\(folder)/", with: "\t\(old)/")
            }
            try Data(manifest.utf8).write(to: URL(fileURLWithPath: manifestPath))
            // Its message as an earlier tidemark wrote it too: no `Tidemark-Tree` trailer.
            let message = try git(["log", "-1", "--format=%B"], in: mirror).split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("Tidemark-Tree:") }.joined(separator: "\n")
            _ = try git(["commit", "-q", "-a", "--amend", "-m", message], in: mirror)
            _ = try git(["update-ref", "refs/tidemark/upstream", "HEAD"], in: mirror)

            upstream.put(ItemID("added"), "2024-05-01T00:00:00Z")
            let report = try await Mirror.open(at: mirror, upstream: upstream).sync()
            let expected = "items/" + (try ItemPath.relativePath(for: ItemID("added"), fanoutDigits: 2))
            #expect(report.counts == ChangeCounts(added: 1))
            #expect(report.paths.contains(expected))
            #expect(FileManager.default.fileExists(atPath: mirror + "/" + expected))
            #expect(try git(["status", "--porcelain"], in: mirror) == "")
            // An item stored flat while fanout was off comes first in the manifest: the width is
            // still that of the collection's folders.
            _ = try git(["config", "tidemark.fanout", "false"], in: mirror)
            upstream.put(ItemID("a-flat"), "2024-05-02T00:00:00Z")
            #expect(try await Mirror.open(at: mirror, upstream: upstream).sync().paths.contains("items/a-flat.json"))
            _ = try git(["config", "tidemark.fanout", "true"], in: mirror)
            upstream.put(ItemID("zz"), "2024-05-03T00:00:00Z")
            let later = "items/" + (try ItemPath.relativePath(for: ItemID("zz"), fanoutDigits: 2))
            #expect(try await Mirror.open(at: mirror, upstream: upstream).sync().paths.contains(later))
            try git(["fsck", "--strict"], in: mirror)
        }
    }

    @Test func localEditsBlockASyncUnlessForced() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            let file = path + "/m/items/item-1.json"
            try Data("{\"mine\": true}\n".utf8).write(to: URL(fileURLWithPath: file))
            #expect(try await mirror.status().items.map { "\($0.upstream.rawValue)\($0.local.rawValue)" } == [" M"])
            upstream.put(ItemID("item-1"), "2024-05-01T00:00:00Z")
            await #expect { _ = try await mirror.sync() } throws: {
                if case .localEdits(let items, _) = $0 as? MirrorError { return items == ["items/item-1"] }
                return false
            }
            #expect(FileManager.default.contents(atPath: file) == Data("{\"mine\": true}\n".utf8))
            #expect(try await mirror.status().items.map { "\($0.upstream.rawValue)\($0.local.rawValue)" } == ["MM"])
            _ = try await mirror.sync(SyncOptions(force: true))
            #expect(String(decoding: FileManager.default.contents(atPath: file)!, as: UTF8.self).contains("2024-05-01"))
            #expect(try await mirror.status().isClean)
        }
    }

    @Test func rollbackShowsWhatIsBehindAndTheNextSyncDownloadsNothing() async throws {
        try await withScratch { path in
            let upstream = seeded(4)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.put(ItemID("item-0"), "2024-06-01T00:00:00Z")
            _ = try await mirror.sync()
            _ = upstream.takeDownloads()
            let rollback = try await mirror.rollback(to: "HEAD~1")
            #expect(rollback.paths.contains("items/item-0.json"))
            #expect(try await mirror.status().items.map { "\($0.upstream.rawValue) \($0.id)" } == ["M item-0"])
            let log = try await mirror.log()
            #expect(log.count == 3 && log[0].restores == rollback.restored.hex)
            let sync = try await mirror.sync()
            #expect(sync.counts == ChangeCounts(changed: 1))
            #expect(upstream.takeDownloads().isEmpty, "objects already stored are re-used")
            #expect(try await mirror.status().isClean)
            // --hard resets the branch; the reflog keeps the old tip.
            let hard = try await mirror.rollback(to: "HEAD~2", hard: true)
            #expect(try await mirror.log().first?.commit == hard.restored.hex)
            #expect(try git(["rev-parse", "main@{1}"], in: path + "/m").hasPrefix(hard.previous.hex))
        }
    }

    @Test func aSecondRunFailsAtOnceWhileTheLockIsHeld() async throws {
        try await withScratch { path in
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: seeded(2))
            let fd = open(path + "/m/.git/tidemark.lock", O_RDWR)
            #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
            // The holder's pid when it lives; a pid that names no process (left by a killed run)
            // is not named: the lock may be a reader's flock.
            let living = "\(getppid())\n"
            _ = pwrite(fd, living, living.utf8.count, 0)
            await #expect { _ = try await mirror.fetch() } throws: {
                String(describing: $0).contains("another tidemark process (pid \(getppid())) is running")
            }
            _ = ftruncate(fd, 0)
            _ = pwrite(fd, "999999999\n", 10, 0)
            await #expect { _ = try await mirror.fetch() } throws: {
                String(describing: $0).contains("another process holds this mirror's run lock: a tidemark run, or a reader or script")
            }
            flock(fd, LOCK_UN)
            close(fd)
            _ = try await mirror.fetch()
        }
    }

    /// Calls on one handle that take the run lock wait for each other (an actor let the second
    /// in while the first awaited its listing, and it failed as "another process"); a second
    /// handle in the same process is told it is this one.
    @Test func callsOnOneHandleRunOneAfterAnother() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.put(ItemID("item-1"), "2024-02-01T00:00:00Z")
            upstream.listingDelay = 0.3
            async let fetched = mirror.fetch()
            async let synced = mirror.sync()
            let (fetch, sync) = try await (fetched, synced)
            #expect(fetch.downloaded + (sync.fetch?.downloaded ?? 0) == 1)
            #expect(try await mirror.status().isClean)
            let other = try Mirror.open(at: path + "/m", upstream: upstream)
            async let first = mirror.fetch()
            try await Task.sleep(nanoseconds: 100_000_000)
            await #expect { _ = try await other.fetch() } throws: {
                String(describing: $0).hasPrefix("this process is already running a tidemark command in this mirror")
            }
            _ = try await first
        }
    }

    /// The manifest is read on another thread while the listing starts: one that cannot be parsed
    /// is still the error a fetch reports, naming the collection, and no ref moves (a `dir`
    /// upstream, whose listing asks for the manifest, and one that only looks items up).
    @Test(arguments: ["dir", "memory"])
    func anUnreadableManifestIsTheErrorAFetchReports(_ kind: String) async throws {
        try await withScratch { path in
            let root = path + "/m"
            for index in 0..<5 {
                try FileManager.default.createDirectory(atPath: path + "/up", withIntermediateDirectories: true)
                try Data("{\"lastModified\": \"2024-01-01T00:00:0\(index)Z\"}".utf8)
                    .write(to: URL(fileURLWithPath: path + "/up/item-\(index).json"))
            }
            let (mirror, _) = kind == "dir"
                ? try await Mirror.clone("dir:" + path + "/up", to: root)
                : try await Mirror.clone("test:memory", to: root, upstream: seeded(5))
            try Data((Manifest.header + "\na\tb\n").utf8).write(to: URL(fileURLWithPath: root + "/.tidemark/items.manifest"))
            _ = try git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "break the manifest"], in: root)
            _ = try git(["update-ref", "refs/tidemark/upstream", "HEAD"], in: root)
            await #expect { _ = try await mirror.fetch() } throws: { error in
                guard case .corruptManifest(let collection, _) = error as? MirrorError else { return false }
                return collection == "items"
            }
            #expect(try git(["rev-parse", "refs/tidemark/upstream"], in: root) == (try git(["rev-parse", "HEAD"], in: root)))
        }
    }

    @Test func notAMirrorIsAClearError() async throws {
        try await withScratch { path in
            #expect { _ = try Mirror.open(at: path) } throws: { String(describing: $0).contains("not a tidemark mirror") }
            try git(["init", "-q", path + "/plain"], in: path)
            #expect { _ = try Mirror.open(at: path + "/plain") } throws: {
                String(describing: $0).hasPrefix("not a tidemark mirror: the git repository \(path)/plain/ has no tidemark.upstream")
            }
        }
    }

    /// Revisions as git takes them: `upstream` with suffixes, `A..B` for log and diff, `A...B`
    /// for diff (from the merge base).
    @Test func revisionRangesAndUpstreamSuffixes() async throws {
        try await withScratch { path in
            let upstream = seeded(3)
            let (mirror, _) = try await Mirror.clone("test:memory", to: path + "/m", upstream: upstream)
            upstream.put(ItemID("item-1"), "2024-02-01T00:00:00Z")
            _ = try await mirror.fetch()
            upstream.put(ItemID("item-2"), "2024-02-02T00:00:00Z")
            _ = try await mirror.fetch()
            // A fetch builds on HEAD: the tracked ref is one snapshot ahead; its reflog holds the
            // fetch before.
            let fetched = try await mirror.log(from: "upstream")
            #expect(fetched.count == 2)
            #expect(try await mirror.log(from: "HEAD..upstream").map(\.commit) == [fetched[0].commit])
            #expect(try await mirror.log(from: "..upstream").map(\.commit) == [fetched[0].commit])
            #expect(try await mirror.log(from: "upstream..").isEmpty)
            #expect(try await mirror.log(from: "upstream~1").first?.commit == fetched[1].commit)
            #expect(try await mirror.log(from: "upstream^").first?.commit == fetched[1].commit)
            // What the last fetch brought; then all that is fetched, from the merge base (HEAD).
            #expect(try await mirror.diff(["upstream@{1}..upstream"]).entries.compactMap(\.item) == ["items/item-2"])
            #expect(try await mirror.diff(["upstream@{1}", "upstream"]).entries.compactMap(\.item) == ["items/item-2"])
            // Only the detail asked for is worked out; the files are the same.
            let full = try await mirror.diff(["upstream@{1}..upstream"])
            let bare = try await mirror.diff(["upstream@{1}..upstream"], format: nil, detail: [])
            let counted = try await mirror.diff(["upstream@{1}..upstream"], format: .nameStatus, detail: .lineCounts)
            #expect(bare.entries.map(\.path) == full.entries.map(\.path) && bare.text.isEmpty && !full.text.isEmpty)
            #expect(bare.entries.allSatisfy { $0.item == nil && $0.added == 0 && $0.removed == 0 } && full.insertions > 0)
            #expect(counted.entries.map(\.added) == full.entries.map(\.added) && counted.entries.allSatisfy { $0.item == nil })
            #expect(counted.text == full.entries.map { "\($0.status)\t\($0.path)\n" }.joined())
            #expect(try await mirror.diff(["HEAD...upstream"]).entries.compactMap(\.item).sorted() == ["items/item-1", "items/item-2"])
            // A commit of the user's after a fetch: `upstream...HEAD` is that commit's change alone,
            // `upstream..HEAD` also takes back what the fetch brought.
            _ = try await mirror.sync()
            upstream.put(ItemID("item-0"), "2024-02-03T00:00:00Z")
            _ = try await mirror.fetch()
            try Data("{}\n".utf8).write(to: URL(fileURLWithPath: path + "/m/notes.json"))
            try git(["add", "notes.json"], in: path + "/m")
            try git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "notes"], in: path + "/m")
            let mine = try await mirror.diff(["upstream...HEAD"]).entries.map(\.path)
            #expect(mine == ["notes.json"])
            let both = try await mirror.diff(["upstream..HEAD"]).entries.map(\.path)
            #expect(both.filter { !$0.hasPrefix(".tidemark/") } == ["items/item-0.json", "notes.json"])
            let log = try await mirror.log(from: "upstream..HEAD").map(\.summary)
            #expect(log == ["notes"])
            // `@` is HEAD, with suffixes too, as in git.
            let parent = try git(["rev-parse", "HEAD~1"], in: path + "/m").trimmingCharacters(in: .whitespacesAndNewlines)
            for revision in ["@~1", "@^", "@~"] {
                #expect(try await mirror.log(from: revision, limit: 1).first?.commit == parent, "\(revision)")
            }
            #expect(try await mirror.log(from: "@..upstream").map(\.commit) == mirror.log(from: "HEAD..upstream").map(\.commit))
            // Either side's snapshots since they parted, newest first, as git lists them.
            for (range, gitRange) in [("HEAD...upstream", "HEAD...tidemark/upstream"), ("upstream...HEAD", "tidemark/upstream...HEAD")] {
                let either = try await mirror.log(from: range).map(\.commit)
                let gitEither = try git(["log", "--first-parent", "--format=%H", gitRange], in: path + "/m")
                #expect(either.count == 2 && either == gitEither.split(separator: "\n").map(String.init), "\(either) \(gitEither)")
                #expect(try await mirror.log(from: range, limit: 1).map(\.commit) == [either[0]])
            }
            #expect(try await mirror.log(from: "HEAD...HEAD").isEmpty)
            await #expect { _ = try await mirror.diff(["HEAD..upstream", "HEAD"]) } throws: {
                String(describing: $0).contains("'HEAD..upstream' is a range")
            }
            await #expect { _ = try await mirror.log(from: "upstreams") } throws: {
                String(describing: $0) == "unknown revision 'upstreams'"
            }
            // A branch named upstream: the name stays tidemark's, with a warning, as git warns.
            #expect(await mirror.revisionWarnings(["upstream..HEAD"]).isEmpty)
            try git(["branch", "upstream", "HEAD~1"], in: path + "/m")
            #expect(await mirror.revisionWarnings(["upstream..HEAD"]) == ["refname 'upstream' is ambiguous: tidemark takes it as "
                    + "refs/tidemark/upstream, not refs/heads/upstream (name that one heads/upstream)"])
            #expect(await mirror.revisionWarnings(["HEAD", "upstreams"]).isEmpty)
            #expect(try await mirror.log(from: "upstream").first?.commit != (try await mirror.log(from: "heads/upstream").first?.commit))
        }
    }
}
