// The one doctest main; every tests/test_*.cpp file adds its cases.
//
// It also gives the suite run-time skips, which doctest 2.4 lacks (its skip is a
// decorator fixed at compile time). A test case that cannot run here calls
// attn::test::skip(why) (test_util.hpp); the listener below prints
// "SKIPPED: <test case>: <why>" when it ends. One that skipped and checked nothing is
// skipped as a whole; when every test case of the run is, the process exits with
// ATTN_TEST_SKIP_CODE, which ctest (one test case per process) reports as skipped
// (SKIP_RETURN_CODE in tests/CMakeLists.txt). A failure outranks a skip.
//
// A test case that made no assertion and did not skip proved nothing: the listener
// prints "FAILED: <test case>: made no assertion and did not skip" and the process
// exits 1, whatever doctest's summary (which counts it as passed) says.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <ostream>
#include <string>

#include "test_util.hpp"

namespace {

struct SkipTally {
    std::string why;  // the running test case's reasons; empty while it has not skipped
    int ran = 0;      // test cases run
    int skipped = 0;  // of those, the ones that skipped and checked nothing
    int empty = 0;    // of those, the ones that neither checked anything nor skipped
};
SkipTally tally;

class SkipListener final : public doctest::IReporter {
public:
    explicit SkipListener(const doctest::ContextOptions& opt) : out_(*opt.cout) {}

    void test_case_start(const doctest::TestCaseData& tc) override {
        test_case_ = &tc;
        tally.why.clear();
        ++tally.ran;
    }
    void test_case_end(const doctest::CurrentTestCaseStats& st) override {
        if (tally.why.empty() && st.testCaseSuccess && st.numAssertsCurrentTest == 0) {
            ++tally.empty;
            out_ << "FAILED: " << test_case_->m_name << ": made no assertion and did not skip (attn::test::skip)"
                 << std::endl;
        }
        if (tally.why.empty() || !st.testCaseSuccess) return;
        // A test case that checked something before (or beside, in another SUBCASE) its
        // skip passes; it is still listed, so the part not run stays visible.
        const bool whole = st.numAssertsCurrentTest == 0;
        tally.skipped += whole ? 1 : 0;
        out_ << (whole ? "SKIPPED: " : "SKIPPED in part: ") << test_case_->m_name << ": " << tally.why << std::endl;
    }
    void test_run_end(const doctest::TestRunStats&) override {
        if (tally.empty > 0)
            out_ << "FAILED: " << tally.empty << " of " << tally.ran
                 << " test cases made no assertion (doctest's summary below counts them as passed)" << std::endl;
        if (tally.skipped > 0 && tally.ran > 1)
            out_ << "SKIPPED: " << tally.skipped << " of " << tally.ran
                 << " test cases (doctest's summary below counts them as passed)" << std::endl;
    }

    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}

private:
    std::ostream& out_;
    const doctest::TestCaseData* test_case_ = nullptr;
};

REGISTER_LISTENER("attn-skips", 1, SkipListener);

}  // namespace

void attn::test::skip(const std::string& why) {
    std::string& all = tally.why;
    if (all.find(why) == std::string::npos) all += (all.empty() ? "" : "; ") + why;
}

int main(int argc, char** argv) {
    doctest::Context context;
    // doctest's summary would call the test cases left out by the filters "skipped"
    context.setOption("no-skipped-summary", true);
    context.applyCommandLine(argc, argv);
    const int status = context.run();
    if (status != 0 || context.shouldExit()) return status;
    if (tally.empty > 0) return 1;
    return tally.ran > 0 && tally.skipped == tally.ran ? ATTN_TEST_SKIP_CODE : 0;
}
