import './base.css';
import './logs.css';
import './tree.css';
import 'uplot/dist/uPlot.min.css';
import './usage.css';
import './inspect.css';
import './vocabulary.css';
