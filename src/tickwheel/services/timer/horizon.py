"""Re-exports `tickwheel.core.timer.horizon` (decision 0090): what is due within one partition's
horizon: each job's next slot and each execution's deadline in a timing wheel, and the jobs
whose next slot lies beyond it, parked until the horizon reaches them."""

from tickwheel.core.timer.horizon import Horizon as Horizon
from tickwheel.core.timer.horizon import Target as Target
from tickwheel.core.wheel import TimingWheel as TimingWheel
