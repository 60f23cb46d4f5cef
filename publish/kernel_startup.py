"""Run in every kernel that executes the book (an IPython startup file, `publish.execute.kernel_env`), never
imported: each figure a chapter shows carries, in its output's metadata, what the page needs to check and
describe it, measured on the figure itself:

* ``book_smallest_text_px``: the size of the smallest text that is drawn (titles, labels, ticks, legends,
  annotations), in the PNG's pixels; the browser test scales it by how wide the page draws the PNG;
* ``book_description``: what the figure shows, from its titles, axis labels, legends and colour bars (the
  image's alt text on the page, `publish.pages`).
"""


def _install() -> None:
    try:
        import matplotlib_inline.backend_inline as inline
        from matplotlib.text import Text
    except ImportError:  # no matplotlib: no figures
        return
    fetch = inline._fetch_figure_metadata

    def drawn_texts(fig) -> list:  # noqa: ANN001 - a matplotlib Figure
        """The non-empty texts a draw of `fig` draws (not those of hidden axes or ticks out of view)."""
        found, draw = [], Text.draw

        def record(self, renderer):  # noqa: ANN001, ANN202
            if self.get_visible() and self.get_text().strip():
                found.append(self)
            return draw(self, renderer)

        Text.draw = record
        try:
            fig.canvas.draw()
        finally:
            Text.draw = draw
        return found

    def plain(text: str) -> str:
        return " ".join(text.replace("$", "").replace("\\", "").split())

    def describe(fig) -> str:  # noqa: ANN001 - a matplotlib Figure
        """One sentence per panel: its title, what is drawn against what, its legend."""
        panels = [ax for ax in fig.axes if ax.get_visible()]
        colourbars = [ax for ax in panels if getattr(ax, "_colorbar", None) is not None]
        plots = [ax for ax in panels if ax not in colourbars]
        head = plain(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) else ""
        sentences = [head] if head else []
        if len(plots) > 1:
            sentences.append(f"{len(plots)} panels")
        for ax in plots:
            kind = "an image" if ax.get_images() else "a plot"
            title, x, y = plain(ax.get_title()), plain(ax.get_xlabel()), plain(ax.get_ylabel())
            words = [f'"{title}"' if title else "", kind]
            if x and y:
                words.append(f"of {y} against {x}")
            elif x or y:
                words.append(f"along {x or y}")
            legend = ax.get_legend()
            entries = [plain(t.get_text()) for t in legend.get_texts()] if legend else []
            if entries:
                words.append("with lines for " + ", ".join(e for e in entries if e))
            sentences.append(" ".join(w for w in words if w))
        for ax in colourbars:
            label = plain(ax.get_ylabel() or ax.get_xlabel())
            sentences.append("a colour scale" + (f" of {label}" if label else ""))
        return "; ".join(sentences) + "."

    def metadata(fig):  # noqa: ANN001, ANN202 - matplotlib_inline's own signature
        found = dict(fetch(fig) or {})
        texts = drawn_texts(fig)
        if texts:
            found["book_smallest_text_px"] = round(min(t.get_fontsize() for t in texts) * fig.dpi / 72, 2)
        found["book_description"] = describe(fig)
        return found

    inline._fetch_figure_metadata = metadata


_install()
del _install
