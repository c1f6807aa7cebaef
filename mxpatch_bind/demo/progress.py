"""The demo's progress display on stderr: a tqdm bar, or MXNet's Speedometer lines (private)."""

import logging
import sys
from typing import Any


class Progress:
    """A run's progress on stderr: a tqdm bar when available, else MXNet's Speedometer.

    The rate shown is the run's own: images trained over the seconds this run has trained,
    the very figure the final table prints. Epochs of the two runs alternate, so a bar's
    wall-clock rate (tqdm's own) would count the other run's time too.
    """

    def __init__(self, kind: str, title: str, total_images: int, batch_size: int,
                 position: int = 0) -> None:
        self.kind, self.title = _progress_kind(kind), title
        if self.kind == "tqdm":
            from tqdm import tqdm
            self.bar = tqdm(total=total_images, desc=f"{title!s:<14}", unit="img",
                            file=sys.stderr, position=position, leave=True,
                            dynamic_ncols=True,
                            bar_format="{desc} {percentage:3.0f}%|{bar}| "
                                       "{n_fmt}/{total_fmt} img{postfix}")
        elif self.kind == "speedometer":
            import mxnet as mx
            if not logging.getLogger().handlers:
                logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                                    format="%(message)s")
            logging.getLogger().setLevel(logging.INFO)
            self.speedometer = mx.callback.Speedometer(batch_size, frequent=20)

    def update(self, epoch: int, nbatch: int, metric: Any, images: int,
               samples_per_s: float) -> None:
        """After a batch of ``images``; ``samples_per_s`` on the run's own clock."""
        if self.kind == "tqdm":
            self.bar.update(images)
            self.bar.set_postfix_str(self._postfix(epoch, metric, samples_per_s),
                                     refresh=False)
        elif self.kind == "speedometer":
            import mxnet as mx
            if nbatch == 0:
                logging.info("%s, epoch %d", self.title, epoch)
            self.speedometer(mx.model.BatchEndParam(epoch, nbatch, metric, None))

    def end_epoch(self, epoch: int, metric: Any, samples_per_s: float) -> None:
        """After an epoch: the rate so far, as the table will count it."""
        if self.kind == "tqdm":
            self.bar.set_postfix_str(self._postfix(epoch, metric, samples_per_s))
        elif self.kind == "speedometer":
            logging.info("%s, epoch %d: %.1f samples/s so far", self.title, epoch,
                         samples_per_s)

    def close(self) -> None:
        if self.kind == "tqdm":
            self.bar.close()

    @staticmethod
    def _postfix(epoch: int, metric: Any, samples_per_s: float) -> str:
        name, value = metric.get()
        return f"{samples_per_s:.1f} img/s, epoch {epoch} {name} {value:.3f}"


def _progress_kind(kind: str) -> str:
    """``auto``: a tqdm bar on a terminal, else Speedometer's plain log lines (a file or a
    pipe gets no carriage returns and escape sequences)."""
    if kind != "auto":
        return kind
    if not sys.stderr.isatty():
        return "speedometer"
    try:
        import tqdm as _  # noqa: F401  (an optional extra: is it installed?)
    except ImportError:
        return "speedometer"
    return "tqdm"
