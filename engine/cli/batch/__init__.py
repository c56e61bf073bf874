"""``nlmeans-studio batch``: many files denoised into a folder, one a task on a Dask cluster.

The files a batch's inputs name and where each output goes (``jobs``), how a long file is cut
into segments (``plan``), the record in the output folder that lets a rerun skip what is done
(``manifest``), one file denoised (or planned) on a worker by the functions behind ``denoise`` and
``denoise-volume`` (``task``), a long file's segments and their join (``segments``), the cluster
(``cluster``), the progress and the summary table (``report``), and the command that runs them
(``command``).
"""
