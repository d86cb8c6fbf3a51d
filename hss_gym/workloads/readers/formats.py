"""The trace formats hss-gym reads, under the one name they had before the readers were split:
every public name of the format modules, for code that imports them from here.

Where each part lives:

* :mod:`~hss_gym.workloads.readers.protocol` - the :class:`Parser` protocol, the :class:`Block`
  of requests a parser returns, and what the parsers share;
* :mod:`~hss_gym.workloads.readers.delimited` - the engine of the one-request-per-line formats;
* :mod:`~hss_gym.workloads.readers.table` - the format table (the delimited formats, ``csv``,
  :data:`FORMATS`, :data:`FORMAT_OPTIONS`, :func:`make_parser`);
* :mod:`~hss_gym.workloads.readers.blkparse` and :mod:`~hss_gym.workloads.readers.fio` - the
  two line-oriented formats;
* :mod:`~hss_gym.workloads.readers.detect` - which format a file is in.
"""

from __future__ import annotations

from hss_gym.workloads.readers.blkparse import BlkparseParser
from hss_gym.workloads.readers.delimited import (Column, DelimitedFormat, DelimitedParser,
                                                 header_text)
from hss_gym.workloads.readers.detect import detect
from hss_gym.workloads.readers.fio import FioParser
from hss_gym.workloads.readers.protocol import (DROP, MAX_JUNK_LINES, SECTOR, TIME_UNITS, Block,
                                                Columns, FatalFormatError, Parser, parse_lines)
from hss_gym.workloads.readers.table import (ALIBABA, CLOUDPHYSICS, DELIMITED, DISKSIM,
                                             FORMAT_OPTIONS, FORMATS, FIU, HEIMDALL, MQSIM, MSR,
                                             NAMED_BYTE_UNITS, NAMED_TIME_UNITS, SPC, SYSTOR17,
                                             TENCENT, csv_format, make_parser, unit_in_name)

__all__ = ["ALIBABA", "CLOUDPHYSICS", "DELIMITED", "DISKSIM", "DROP", "FIU", "FORMATS",
           "FORMAT_OPTIONS", "HEIMDALL", "MAX_JUNK_LINES", "MQSIM", "MSR", "NAMED_BYTE_UNITS",
           "NAMED_TIME_UNITS", "SECTOR", "SPC", "SYSTOR17", "TENCENT", "TIME_UNITS",
           "BlkparseParser", "Block", "Column", "Columns", "DelimitedFormat", "DelimitedParser",
           "FatalFormatError", "FioParser", "Parser", "csv_format", "detect",
           "header_text", "make_parser", "parse_lines", "unit_in_name"]
