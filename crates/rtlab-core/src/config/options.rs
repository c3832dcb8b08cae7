//! The command-line options of the key table: a key that `rtlab run` takes
//! as a one-off option (`--period 200us` for `timer.period`) declares it in
//! its row of [`super::keys::KEYS`], so that a key and its flag are one row.
//! The command line builds the options from the rows and writes their values
//! as the keys of an experiment (`rtlab run --print` shows it).

/// The groups of options of `rtlab run --help`, as rtla groups its own, in
/// the order the help lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OptionGroup {
    /// What the timer threads measure, where, how long.
    TimerThreads,
    /// The load run beside them.
    Load,
    /// The machine set up for the run.
    IsolationAndTuning,
    /// The trace: explaining late wake-ups.
    Tracing,
    /// What to do at a late wake-up, or after the run.
    Actions,
    /// Where the results go.
    Output,
}

impl OptionGroup {
    /// Every group, in the help's order.
    pub const ALL: [OptionGroup; 6] = [
        OptionGroup::TimerThreads,
        OptionGroup::Load,
        OptionGroup::IsolationAndTuning,
        OptionGroup::Tracing,
        OptionGroup::Actions,
        OptionGroup::Output,
    ];

    /// The group's heading in the help.
    pub const fn heading(self) -> &'static str {
        match self {
            OptionGroup::TimerThreads => "Timer threads",
            OptionGroup::Load => "Load",
            OptionGroup::IsolationAndTuning => "Isolation and tuning",
            OptionGroup::Tracing => "Tracing",
            OptionGroup::Actions => "Actions",
            OptionGroup::Output => "Output",
        }
    }
}

/// The one-off option of `rtlab run` that writes a key. Its value is the
/// key's, written as given; a flag key ([`super::keys::FLAG`]) makes a flag
/// option, a repeatable key an option that may be repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliOption {
    /// The long option, without its dashes (`histo-size`).
    pub long: &'static str,
    /// Its value's name in the help (`DURATION`); unused for a flag.
    pub value_name: &'static str,
    /// Its line of the help.
    pub help: &'static str,
    /// The group of the help it is listed in.
    pub group: OptionGroup,
    /// The value written when the option is not given (the built-in
    /// experiment's: `FIFO`), or nothing.
    pub preset: Option<&'static str>,
    /// Where its line goes among the lines the one-off options write in
    /// the key's stanza (the order `rtlab run --print` has always had).
    pub rank: u8,
}
