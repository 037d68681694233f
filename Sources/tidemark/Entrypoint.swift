#if canImport(Glibc)
import Glibc
#endif
import Tidemark

/// The `tidemark` executable: parses the command line and runs the command.
@main
enum Entrypoint {
    static func main() async {
        // Before any thread starts: a descriptor one opens (dispatch's epoll, an eventfd) must
        // not take a closed stdout's number, where the output then went (and failed).
        openClosedStandardDescriptors()
        // libgit2's set-up (about 5 ms) while the arguments are parsed: about 3 ms off every command.
        Mirror.prepareInBackground()
        growHeapInLargeSteps()
        await TidemarkCommand.runMain()
        exitProcess(0)
    }

    /// glibc's heap grows, and is trimmed back, in steps of 32 MiB instead of 128 KiB
    /// (`mallopt(M_TOP_PAD)`, looked up at run time: Swift's Glibc module has no `malloc.h`). A sync
    /// allocates and frees large buffers (the 7 MB manifest, a 10 MB index, trees) on several
    /// threads, and returning the memory each time makes the next buffer fault its pages in again.
    /// A 1% sync of 100k items: 199 ms against 209 (medians of 12 alternating runs with the
    /// watcher, 11 of 12 faster), 314 against 322 ms without it; a clone's peak memory was no
    /// higher (210–224 MB against 237–274). Setting it also keeps glibc's mmap threshold at
    /// 128 KiB; raising that to 32 MiB too gained 3% on a sync and cost a clone 49 MB of peak
    /// memory, so it is left.
    static func growHeapInLargeSteps() {
        #if os(Linux)
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        let topPad: Int32 = -2  // M_TOP_PAD
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: MallOpt.self)(topPad, 32 << 20)
        #endif
    }
}
